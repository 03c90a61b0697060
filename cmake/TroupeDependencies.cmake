# Finds the Debian-packaged dependencies and wraps the ones without a CMake package (CAF 0.17)
# as imported targets, so every layer links plain target names.
find_package(Threads REQUIRED)
find_package(TBB CONFIG REQUIRED)
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)
find_package(CapnProto CONFIG REQUIRED)
find_package(pegtl CONFIG REQUIRED)  # header-only PEG parser for the config language

find_path(CAF_INCLUDE_DIR caf/all.hpp REQUIRED)
find_library(CAF_CORE_LIBRARY caf_core REQUIRED)
find_library(CAF_IO_LIBRARY caf_io REQUIRED)
add_library(caf::core UNKNOWN IMPORTED)
set_target_properties(caf::core PROPERTIES
  IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
  INTERFACE_LINK_LIBRARIES Threads::Threads)
add_library(caf::io UNKNOWN IMPORTED)
set_target_properties(caf::io PROPERTIES
  IMPORTED_LOCATION ${CAF_IO_LIBRARY}
  INTERFACE_LINK_LIBRARIES caf::core)

# CUDA is optional: AUTO builds it when nvcc is found, ON insists, OFF skips.
set(TROUPE_HAVE_CUDA OFF)
if(NOT TROUPE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    find_path(CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    find_library(CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR})
    if(CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
      set(TROUPE_HAVE_CUDA ON)
    elseif(TROUPE_CUDA STREQUAL "ON")
      message(FATAL_ERROR "TROUPE_CUDA=ON but cuDNN was not found next to ${CUDAToolkit_INCLUDE_DIRS}")
    endif()
  elseif(TROUPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TROUPE_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "Troupe CUDA kernels: ${TROUPE_HAVE_CUDA}")

if(TROUPE_BUILD_TESTS)
  find_package(Catch2 2 CONFIG REQUIRED)
endif()
