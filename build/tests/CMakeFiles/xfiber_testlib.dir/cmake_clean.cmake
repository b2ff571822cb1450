file(REMOVE_RECURSE
  "CMakeFiles/xfiber_testlib.dir/lib/testlib.c.o"
  "CMakeFiles/xfiber_testlib.dir/lib/testlib.c.o.d"
  "libxfiber_testlib.a"
  "libxfiber_testlib.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/xfiber_testlib.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
