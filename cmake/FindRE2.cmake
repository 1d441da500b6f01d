# Finds RE2, the linear-time regular-expression library (Debian: libre2-dev),
# and defines the imported target RE2::re2. RE2's own CMake package is used when
# it is installed; otherwise pkg-config's answer is a hint for find_path and
# find_library, which also search CMAKE_PREFIX_PATH (the GPU machine's .deps/usr,
# where there is no pkg-config).
find_package(re2 CONFIG QUIET)
if(TARGET re2::re2)
  if(NOT TARGET RE2::re2)
    add_library(RE2::re2 INTERFACE IMPORTED)
    target_link_libraries(RE2::re2 INTERFACE re2::re2)
  endif()
  set(RE2_FOUND TRUE)
  return()
endif()

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(PC_RE2 QUIET re2)
endif()
find_path(RE2_INCLUDE_DIR re2/re2.h HINTS ${PC_RE2_INCLUDE_DIRS})
find_library(RE2_LIBRARY NAMES re2 HINTS ${PC_RE2_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(RE2 REQUIRED_VARS RE2_LIBRARY RE2_INCLUDE_DIR)
mark_as_advanced(RE2_INCLUDE_DIR RE2_LIBRARY)
if(RE2_FOUND AND NOT TARGET RE2::re2)
  find_package(Threads REQUIRED)
  add_library(RE2::re2 UNKNOWN IMPORTED)
  set_target_properties(RE2::re2 PROPERTIES
    IMPORTED_LOCATION "${RE2_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${RE2_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
