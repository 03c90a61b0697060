# FindCAF: the C++ Actor Framework 0.17 as Debian packages it (libcaf-dev), which ships no
# CMake package of its own. Defines the imported targets caf::core and caf::io, unless the
# including project already has targets of those names (a host that builds CAF itself, or
# wrapped it first): then those are used as they are, so Troupe and its host link one CAF.
#
# When Troupe is built inside a host (add_subdirectory) the targets are made GLOBAL: imported
# targets are otherwise visible only in the directory that found them, and the host, which
# links Troupe::actors, should link the same caf::core by name too. Found through the installed
# TroupeConfig.cmake they are ordinary (directory-scoped) imported targets, as from any find
# module.
#
# Result variables: CAF_FOUND, CAF_INCLUDE_DIR, CAF_CORE_LIBRARY, CAF_IO_LIBRARY.
include(FindPackageHandleStandardArgs)

if(TARGET caf::core AND TARGET caf::io)
  set(CAF_FOUND TRUE)
  return()
endif()

find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
find_package_handle_standard_args(CAF REQUIRED_VARS CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY)

if(CAF_FOUND)
  find_package(Threads REQUIRED)
  set(_caf_scope "")
  if(DEFINED TROUPE_TOP_LEVEL AND NOT TROUPE_TOP_LEVEL)  # Troupe's own build, as a subproject
    set(_caf_scope GLOBAL)
  endif()
  if(NOT TARGET caf::core)
    add_library(caf::core UNKNOWN IMPORTED ${_caf_scope})
    set_target_properties(caf::core PROPERTIES
      IMPORTED_LOCATION "${CAF_CORE_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${CAF_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES Threads::Threads)
  endif()
  if(NOT TARGET caf::io)
    add_library(caf::io UNKNOWN IMPORTED ${_caf_scope})
    set_target_properties(caf::io PROPERTIES
      IMPORTED_LOCATION "${CAF_IO_LIBRARY}"
      INTERFACE_LINK_LIBRARIES caf::core)
  endif()
endif()
unset(_caf_scope)
mark_as_advanced(CAF_INCLUDE_DIR CAF_CORE_LIBRARY CAF_IO_LIBRARY)
