file(REMOVE_RECURSE
  "CMakeFiles/xstate_test_api.dir/test_api.c.o"
  "CMakeFiles/xstate_test_api.dir/test_api.c.o.d"
  "xstate_test_api"
  "xstate_test_api.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/xstate_test_api.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
