
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  "ASM"
  )
# The set of files for implicit dependencies of each language:
set(CMAKE_DEPENDS_CHECK_ASM
  "/work/main/src/xstate/regs_x86_64_sysv_elf_gas.S" "/work/main/build/src/CMakeFiles/xfiber_objects.dir/xstate/regs_x86_64_sysv_elf_gas.S.o"
  "/work/main/src/xstate/xsave_x86_64_sysv_elf_gas.S" "/work/main/build/src/CMakeFiles/xfiber_objects.dir/xstate/xsave_x86_64_sysv_elf_gas.S.o"
  )
set(CMAKE_ASM_COMPILER_ID "GNU")

# Preprocessor definitions for this target.
set(CMAKE_TARGET_DEFINITIONS_ASM
  "XFIBER_DEBUG=1"
  )

# The include file search paths:
set(CMAKE_ASM_TARGET_INCLUDE_PATH
  "/work/main/include"
  "/work/main/src"
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/build/generated/build_info.c" "src/CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/__/generated/build_info.c.o.d"
  "/work/main/src/common/version.c" "src/CMakeFiles/xfiber_objects.dir/common/version.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/common/version.c.o.d"
  "/work/main/src/xstate/discover.c" "src/CMakeFiles/xfiber_objects.dir/xstate/discover.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/xstate/discover.c.o.d"
  "/work/main/src/xstate/engine_nofp.c" "src/CMakeFiles/xfiber_objects.dir/xstate/engine_nofp.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/xstate/engine_nofp.c.o.d"
  "/work/main/src/xstate/regs.c" "src/CMakeFiles/xfiber_objects.dir/xstate/regs.c.o" "gcc" "src/CMakeFiles/xfiber_objects.dir/xstate/regs.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
