# `cmake --install`: the layer libraries, their public headers, troupe/version.hpp, and the
# CMake package (TroupeConfig.cmake, TroupeConfigVersion.cmake, TroupeTargets.cmake and the
# FindCAF.cmake it needs) under <prefix>/lib/cmake/Troupe. The CLI installs itself (apps/).
include(CMakePackageConfigHelpers)
get_property(troupe_libraries GLOBAL PROPERTY TROUPE_LIBRARIES)
set(TROUPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Troupe)

# The include directory comes with each library's INSTALL_INTERFACE (cmake/TroupeLibrary.cmake).
install(TARGETS ${troupe_libraries} troupe_all EXPORT TroupeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(layer kernels io graph cluster actors)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${layer}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endforeach()
install(FILES ${PROJECT_BINARY_DIR}/include/troupe/version.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/troupe)
install(EXPORT TroupeTargets NAMESPACE Troupe:: DESTINATION ${TROUPE_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/TroupeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/TroupeConfig.cmake
                              INSTALL_DESTINATION ${TROUPE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TroupeConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/TroupeConfig.cmake
              ${PROJECT_BINARY_DIR}/TroupeConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCAF.cmake
        DESTINATION ${TROUPE_CMAKE_DIR})
