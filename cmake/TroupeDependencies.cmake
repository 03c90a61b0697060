# Finds the Debian-packaged dependencies of the libraries. The installed TroupeConfig.cmake
# repeats these finds (cmake/TroupeConfig.cmake.in), so a host gets the same targets.
# Nothing here creates a target a host may already have: CAF comes through FindCAF.cmake,
# which reuses an existing caf::core / caf::io.
find_package(Threads REQUIRED)
find_package(TBB CONFIG REQUIRED)
find_package(dnnl CONFIG REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(ZLIB REQUIRED)
find_package(JPEG REQUIRED)  # libjpeg-turbo: the JPEG images of RecordIO sets
find_package(pegtl CONFIG REQUIRED)  # header-only PEG parser for the config language
find_package(CAF REQUIRED)
# Cap'n Proto is the wire format of the multi-node layer.
find_package(CapnProto CONFIG REQUIRED)
# OpenSSL's HMAC and random generator admit peers to a cluster (cluster/admission.cpp).
find_package(OpenSSL REQUIRED)
# nlohmann-json (header-only) reads and writes every JSON text: metrics lines, safetensors
# headers. Used by sources only, never by a public header, and linked as a build-only
# requirement (troupe_private_json, cmake/TroupeLibrary.cmake), so the installed package does not need it.
find_package(nlohmann_json 3.11 CONFIG REQUIRED)

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
