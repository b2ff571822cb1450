
# Consider dependencies only in project.
set(CMAKE_DEPENDS_IN_PROJECT_ONLY OFF)

# The set of languages for which implicit dependencies are needed:
set(CMAKE_DEPENDS_LANGUAGES
  )

# The set of dependency files which are needed:
set(CMAKE_DEPENDS_DEPENDENCY_FILES
  "/work/main/tests/xstate/test_api.c" "tests/xstate/CMakeFiles/xstate_test_api.dir/test_api.c.o" "gcc" "tests/xstate/CMakeFiles/xstate_test_api.dir/test_api.c.o.d"
  )

# Targets to which this target links.
set(CMAKE_TARGET_LINKED_INFO_FILES
  "/work/main/build/tests/CMakeFiles/xfiber_testlib.dir/DependInfo.cmake"
  "/work/main/build/src/CMakeFiles/xfiber_static.dir/DependInfo.cmake"
  )

# Fortran module output directory.
set(CMAKE_Fortran_TARGET_MODULE_DIR "")
