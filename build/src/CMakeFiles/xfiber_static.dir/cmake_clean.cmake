file(REMOVE_RECURSE
  "libxfiber.a"
  "libxfiber.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang ASM C)
  include(CMakeFiles/xfiber_static.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
