file(REMOVE_RECURSE
  "CMakeFiles/xstate_test_strategy.dir/test_strategy.c.o"
  "CMakeFiles/xstate_test_strategy.dir/test_strategy.c.o.d"
  "xstate_test_strategy"
  "xstate_test_strategy.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/xstate_test_strategy.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
