file(REMOVE_RECURSE
  "CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o"
  "CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o.d"
  "CMakeFiles/xfiber_objects.dir/common/version.c.o"
  "CMakeFiles/xfiber_objects.dir/common/version.c.o.d"
  "CMakeFiles/xfiber_objects.dir/xstate/discover.c.o"
  "CMakeFiles/xfiber_objects.dir/xstate/discover.c.o.d"
  "CMakeFiles/xfiber_objects.dir/xstate/engine_nofp.c.o"
  "CMakeFiles/xfiber_objects.dir/xstate/engine_nofp.c.o.d"
  "CMakeFiles/xfiber_objects.dir/xstate/regs.c.o"
  "CMakeFiles/xfiber_objects.dir/xstate/regs.c.o.d"
  "CMakeFiles/xfiber_objects.dir/xstate/regs_x86_64_sysv_elf_gas.S.o"
  "CMakeFiles/xfiber_objects.dir/xstate/xsave_x86_64_sysv_elf_gas.S.o"
)

# Per-language clean rules from dependency scanning.
foreach(lang ASM C)
  include(CMakeFiles/xfiber_objects.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
