# troupe_library(<layer> SOURCES ...): the static library troupe_<layer>, also reachable as
# Troupe::<layer> (the name the installed package exports), with
#   - public headers from <layer>/include (included as <troupe/<layer>/...>), and the
#     generated troupe/version.hpp;
#   - private headers from the source root ("kernels/cpu/parallel.hpp"), never seen by users.
function(troupe_library layer)
  cmake_parse_arguments(arg "" "" "SOURCES" ${ARGN})
  set(target troupe_${layer})
  add_library(${target} STATIC ${arg_SOURCES})
  add_library(Troupe::${layer} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${layer} POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_include_directories(${target}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}/include>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR})
  set_property(GLOBAL APPEND PROPERTY TROUPE_LIBRARIES ${target})
endfunction()

# troupe_private_json(<target>): nlohmann-json for a target's sources. Wrapped in
# BUILD_INTERFACE because a static library's private links are still exported (as LINK_ONLY):
# without it the installed TroupeConfig.cmake would have to find nlohmann_json, for headers no
# installed header includes.
function(troupe_private_json target)
  target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:nlohmann_json::nlohmann_json>)
endfunction()
