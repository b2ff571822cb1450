file(REMOVE_RECURSE
  "CMakeFiles/xstate_test_info_json.dir/test_info_json.c.o"
  "CMakeFiles/xstate_test_info_json.dir/test_info_json.c.o.d"
  "xstate_test_info_json"
  "xstate_test_info_json.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/xstate_test_info_json.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
