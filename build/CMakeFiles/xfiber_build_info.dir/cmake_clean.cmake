file(REMOVE_RECURSE
  "CMakeFiles/xfiber_build_info"
  "generated/build_info.c"
)

# Per-language clean rules from dependency scanning.
foreach(lang )
  include(CMakeFiles/xfiber_build_info.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
