file(REMOVE_RECURSE
  "CMakeFiles/xstate_test_regs.dir/seq_nofp.c.o"
  "CMakeFiles/xstate_test_regs.dir/seq_nofp.c.o.d"
  "CMakeFiles/xstate_test_regs.dir/test_regs.c.o"
  "CMakeFiles/xstate_test_regs.dir/test_regs.c.o.d"
  "xstate_test_regs"
  "xstate_test_regs.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/xstate_test_regs.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
