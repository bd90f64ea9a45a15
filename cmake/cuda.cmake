# The CUDA backend (FRUGAL_CUDA=ON): cuda/*.cu and cuda/*.cpp compiled into an object library
# whose objects join the frugal library, linked with the CUDA runtime, cuBLAS and cuDNN.
# Anything missing is a configure error naming what and where: CUDA is never dropped silently.
# Hints: -DCUDAToolkit_ROOT=/path/to/cuda, -DCUDNN_ROOT=/path/to/cudnn (both honoured strictly).

function(frugal_cuda_fail)
  string(CONCAT what ${ARGN})
  message(FATAL_ERROR "FRUGAL_CUDA=ON, but ${what}\n"
    "Install it, point CMake at it, or configure with -DFRUGAL_CUDA=OFF for a CPU-only build.")
endfunction()

# --- CUDA toolkit and nvcc ----------------------------------------------------------------------
# FindCUDAToolkit falls back to /usr/local/cuda when the given root is wrong; an explicit root
# that holds no toolkit is a mistake the user should hear about.
if(NOT CUDAToolkit_ROOT AND DEFINED ENV{CUDAToolkit_ROOT})
  set(CUDAToolkit_ROOT "$ENV{CUDAToolkit_ROOT}")
endif()
if(CUDAToolkit_ROOT AND NOT EXISTS "${CUDAToolkit_ROOT}/bin/nvcc")
  frugal_cuda_fail("CUDAToolkit_ROOT=${CUDAToolkit_ROOT} holds no CUDA toolkit (no bin/nvcc).")
endif()
find_package(CUDAToolkit 12.0)  # C++20 in nvcc
if(NOT CUDAToolkit_FOUND)
  frugal_cuda_fail("the CUDA toolkit 12 or newer (nvcc, cudart, cuBLAS) was not found. "
    "Pass -DCUDAToolkit_ROOT=/path/to/cuda.")
endif()
if(NOT TARGET CUDA::cudart OR NOT TARGET CUDA::cublas OR NOT CUDA_cudart_LIBRARY
   OR NOT CUDA_cublas_LIBRARY)
  frugal_cuda_fail("the CUDA toolkit at ${CUDAToolkit_BIN_DIR}/.. lacks cudart or cuBLAS.")
endif()
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
endif()
enable_language(CUDA)
# CMake before 3.26 does not know nvcc's C++20 flag (nvcc has had it since CUDA 12.0).
if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
endif()

# --- cuDNN ----------------------------------------------------------------------------------------
set(CUDNN_ROOT "" CACHE PATH "cuDNN prefix (empty: search the CUDA toolkit and system paths)")
if(NOT "${CUDNN_ROOT}" STREQUAL "${FRUGAL_CUDNN_ROOT_USED}")  # a new root: search again
  unset(FRUGAL_CUDNN_INCLUDE_DIR CACHE)
  unset(FRUGAL_CUDNN_LIBRARY CACHE)
  set(FRUGAL_CUDNN_ROOT_USED "${CUDNN_ROOT}" CACHE INTERNAL "")
endif()
if(CUDNN_ROOT)
  set(frugal_cudnn_where PATHS "${CUDNN_ROOT}" NO_DEFAULT_PATH)
else()
  get_filename_component(frugal_cuda_prefix "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  set(frugal_cudnn_where HINTS "${frugal_cuda_prefix}" ${CUDAToolkit_INCLUDE_DIRS}
    "${CUDAToolkit_LIBRARY_DIR}")
endif()
find_path(FRUGAL_CUDNN_INCLUDE_DIR cudnn.h ${frugal_cudnn_where} PATH_SUFFIXES include)
find_library(FRUGAL_CUDNN_LIBRARY cudnn ${frugal_cudnn_where} PATH_SUFFIXES lib64 lib lib/x64)
if(NOT FRUGAL_CUDNN_INCLUDE_DIR OR NOT FRUGAL_CUDNN_LIBRARY)
  if(CUDNN_ROOT)
    set(frugal_where "under CUDNN_ROOT=${CUDNN_ROOT}")
  else()
    set(frugal_where "beside the CUDA toolkit (${frugal_cuda_prefix}) or in the system paths")
  endif()
  set(frugal_missing "")
  if(NOT FRUGAL_CUDNN_INCLUDE_DIR)
    list(APPEND frugal_missing "cudnn.h")
  endif()
  if(NOT FRUGAL_CUDNN_LIBRARY)
    list(APPEND frugal_missing "libcudnn")
  endif()
  string(REPLACE ";" " and " frugal_missing "${frugal_missing}")
  frugal_cuda_fail("cuDNN was not found: no ${frugal_missing} ${frugal_where}. "
    "Pass -DCUDNN_ROOT=/path/to/cudnn.")
endif()
file(STRINGS "${FRUGAL_CUDNN_INCLUDE_DIR}/cudnn_version.h" frugal_cudnn_version
  REGEX "#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) +[0-9]+")
string(REGEX REPLACE ".*CUDNN_MAJOR +([0-9]+).*CUDNN_MINOR +([0-9]+).*CUDNN_PATCHLEVEL +([0-9]+).*"
  "\\1.\\2.\\3" frugal_cudnn_version "${frugal_cudnn_version}")
if(NOT frugal_cudnn_version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$" OR frugal_cudnn_version
   VERSION_LESS 8.0)
  frugal_cuda_fail("cuDNN 8 or newer is needed; ${FRUGAL_CUDNN_INCLUDE_DIR}/cudnn_version.h "
    "says '${frugal_cudnn_version}'.")
endif()
message(STATUS "frugal: CUDA ${CUDAToolkit_VERSION} (${CMAKE_CUDA_COMPILER}), cuDNN "
  "${frugal_cudnn_version} (${FRUGAL_CUDNN_LIBRARY}), architectures ${CMAKE_CUDA_ARCHITECTURES}")

# --- NCCL (several GPUs), shipped with the toolkit ---------------------------------------------------
get_filename_component(frugal_cuda_prefix "${CUDAToolkit_BIN_DIR}" DIRECTORY)
find_path(FRUGAL_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} "${frugal_cuda_prefix}"
  PATH_SUFFIXES include)
find_library(FRUGAL_NCCL_LIBRARY nccl HINTS "${CUDAToolkit_LIBRARY_DIR}" "${frugal_cuda_prefix}"
  PATH_SUFFIXES lib64 lib)
if(NOT FRUGAL_NCCL_INCLUDE_DIR OR NOT FRUGAL_NCCL_LIBRARY)
  frugal_cuda_fail("NCCL (nccl.h and libnccl) was not found beside the CUDA toolkit or in the "
    "system paths. Install NCCL or point CMAKE_PREFIX_PATH at it.")
endif()
message(STATUS "frugal: NCCL ${FRUGAL_NCCL_LIBRARY}")

# --- the backend ------------------------------------------------------------------------------------
# Listed, not globbed: a CPU-only fallback for the entry points may live beside them.
set(FRUGAL_CUDA_SOURCES activation.cu affine.cu batchnorm.cu channel.cu check.cpp conv2d.cu cuda_allocator.cpp
  cuda_backend.cpp cuda_entry.cpp cudnn_handles.cpp fixed_point.cu leaky_relu.cu
  group_norm.cu layer_norm.cu linear.cu loss.cu prelu.cu memory.cu pointwise.cu pool.cu reduce.cu relu.cu binary.cu copy.cu gather.cu softmax.cu resize.cu grid_sample.cu matmul.cu nccl_communicator.cpp)
list(TRANSFORM FRUGAL_CUDA_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/cuda/)
add_library(frugal_cuda OBJECT ${FRUGAL_CUDA_SOURCES})
target_include_directories(frugal_cuda PRIVATE ${PROJECT_SOURCE_DIR} ${FRUGAL_CUDNN_INCLUDE_DIR}
  ${FRUGAL_NCCL_INCLUDE_DIR} ${CUDAToolkit_INCLUDE_DIRS})
target_compile_options(frugal_cuda PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${FRUGAL_WARNINGS}>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
set_target_properties(frugal_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON
  CUDA_STANDARD 20 CUDA_STANDARD_REQUIRED ON CUDA_EXTENSIONS OFF)

# Objects, not a link to frugal_cuda, and libraries by path, so that the exported frugal target
# asks nothing of a consumer's CMake (no CUDA:: targets to find).
target_sources(frugal PRIVATE $<TARGET_OBJECTS:frugal_cuda>)
# frugal was created before CUDA was enabled, so it did not pick up the default architectures.
set_target_properties(frugal PROPERTIES CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}")
target_link_libraries(frugal PRIVATE ${CUDA_cudart_LIBRARY} ${CUDA_cublas_LIBRARY}
  ${FRUGAL_CUDNN_LIBRARY} ${FRUGAL_NCCL_LIBRARY})
