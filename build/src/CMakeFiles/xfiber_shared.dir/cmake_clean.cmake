file(REMOVE_RECURSE
  "libxfiber.pdb"
  "libxfiber.so"
  "libxfiber.so.0.1"
  "libxfiber.so.0.1.0"
)

# Per-language clean rules from dependency scanning.
foreach(lang ASM C)
  include(CMakeFiles/xfiber_shared.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
