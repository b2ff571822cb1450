#----------------------------------------------------------------
# Generated CMake target import file for configuration "RelWithDebInfo".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "xfiber::xfiber_static" for configuration "RelWithDebInfo"
set_property(TARGET xfiber::xfiber_static APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(xfiber::xfiber_static PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELWITHDEBINFO "ASM;C"
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libxfiber.a"
  )

list(APPEND _cmake_import_check_targets xfiber::xfiber_static )
list(APPEND _cmake_import_check_files_for_xfiber::xfiber_static "${_IMPORT_PREFIX}/lib/libxfiber.a" )

# Import target "xfiber::xfiber_shared" for configuration "RelWithDebInfo"
set_property(TARGET xfiber::xfiber_shared APPEND PROPERTY IMPORTED_CONFIGURATIONS RELWITHDEBINFO)
set_target_properties(xfiber::xfiber_shared PROPERTIES
  IMPORTED_LOCATION_RELWITHDEBINFO "${_IMPORT_PREFIX}/lib/libxfiber.so.0.1.0"
  IMPORTED_SONAME_RELWITHDEBINFO "libxfiber.so.0.1"
  )

list(APPEND _cmake_import_check_targets xfiber::xfiber_shared )
list(APPEND _cmake_import_check_files_for_xfiber::xfiber_shared "${_IMPORT_PREFIX}/lib/libxfiber.so.0.1.0" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)
