file(REMOVE_RECURSE
  "CMakeFiles/xfiber.dir/cmd_info.c.o"
  "CMakeFiles/xfiber.dir/cmd_info.c.o.d"
  "CMakeFiles/xfiber.dir/json.c.o"
  "CMakeFiles/xfiber.dir/json.c.o.d"
  "CMakeFiles/xfiber.dir/tsc.c.o"
  "CMakeFiles/xfiber.dir/tsc.c.o.d"
  "CMakeFiles/xfiber.dir/xfiber.c.o"
  "CMakeFiles/xfiber.dir/xfiber.c.o.d"
  "CMakeFiles/xfiber.dir/xsave_costs.c.o"
  "CMakeFiles/xfiber.dir/xsave_costs.c.o.d"
  "CMakeFiles/xfiber.dir/xsave_costs_nofp.c.o"
  "CMakeFiles/xfiber.dir/xsave_costs_nofp.c.o.d"
  "xfiber"
  "xfiber.pdb"
)

# Per-language clean rules from dependency scanning.
foreach(lang C)
  include(CMakeFiles/xfiber.dir/cmake_clean_${lang}.cmake OPTIONAL)
endforeach()
