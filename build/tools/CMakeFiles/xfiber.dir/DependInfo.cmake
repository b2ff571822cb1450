
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/tools/cmd_info.c" "tools/CMakeFiles/xfiber.dir/cmd_info.c.o" "gcc" "tools/CMakeFiles/xfiber.dir/cmd_info.c.o.d"
  "/work/main/tools/json.c" "tools/CMakeFiles/xfiber.dir/json.c.o" "gcc" "tools/CMakeFiles/xfiber.dir/json.c.o.d"
  "/work/main/tools/tsc.c" "tools/CMakeFiles/xfiber.dir/tsc.c.o" "gcc" "tools/CMakeFiles/xfiber.dir/tsc.c.o.d"
  "/work/main/tools/xfiber.c" "tools/CMakeFiles/xfiber.dir/xfiber.c.o" "gcc" "tools/CMakeFiles/xfiber.dir/xfiber.c.o.d"
  "/work/main/tools/xsave_costs.c" "tools/CMakeFiles/xfiber.dir/xsave_costs.c.o" "gcc" "tools/CMakeFiles/xfiber.dir/xsave_costs.c.o.d"
  "/work/main/tools/xsave_costs_nofp.c" "tools/CMakeFiles/xfiber.dir/xsave_costs_nofp.c.o" "gcc" "tools/CMakeFiles/xfiber.dir/xsave_costs_nofp.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/src/CMakeFiles/xfiber_static.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
