# libtorch: Debian's libtorch-dev (1.13, CPU) or any libtorch >= 1.13 given through
# CMAKE_PREFIX_PATH (the torch wheel's torch.utils.cmake_prefix_path on the GPU machine).
#
# CUDA support is a property of the libtorch build, not of its version (TORCH_COMPAT.md): Debian
# ships c10/cuda headers without libc10_cuda.so. So the decision comes from what TorchConfig found.

find_package(Torch REQUIRED)

set(FOURFOLD_WITH_CUDA OFF)
if(FOURFOLD_ENABLE_CUDA AND (TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA) AND TARGET torch_cuda)
    set(FOURFOLD_WITH_CUDA ON)
endif()
if(FOURFOLD_WITH_CUDA)
    find_package(CUDAToolkit REQUIRED)
    enable_language(CUDA)
    if(NOT CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "52")
        set(CMAKE_CUDA_ARCHITECTURES 90a)
    endif()
endif()

# fourfold's own kernels (src/fourfold/kernels) need only the CUDA toolkit: they are compiled
# wherever nvcc is found, also beside a CPU-only libtorch (so CI compiles them), and used by the
# workloads where libtorch has CUDA as well.
option(FOURFOLD_KERNELS "Build fourfold's native CUDA kernels when the CUDA toolkit is found" ON)
option(FOURFOLD_PTXAS_VERBOSE "Print ptxas register and spill figures for every kernel" OFF)
set(FOURFOLD_BUILD_KERNELS OFF)
if(FOURFOLD_KERNELS)
    if(NOT CMAKE_CUDA_COMPILER)
        include(CheckLanguage)
        check_language(CUDA)
    endif()
    if(CMAKE_CUDA_COMPILER)
        if(NOT CMAKE_CUDA_ARCHITECTURES)
            set(CMAKE_CUDA_ARCHITECTURES 90a) # sm_90a code plus compute_90a PTX
        endif()
        enable_language(CUDA)
        find_package(CUDAToolkit REQUIRED)
        set(FOURFOLD_BUILD_KERNELS ON)
    endif()
endif()
set(FOURFOLD_WITH_KERNELS OFF)
if(FOURFOLD_BUILD_KERNELS AND FOURFOLD_WITH_CUDA)
    set(FOURFOLD_WITH_KERNELS ON)
endif()

set(FOURFOLD_WITH_MPS OFF)
if(APPLE AND Torch_VERSION VERSION_GREATER_EQUAL 2.0)
    set(FOURFOLD_WITH_MPS ON)
endif()
message(STATUS "fourfold: libtorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX}; "
               "CUDA ${FOURFOLD_WITH_CUDA}; MPS ${FOURFOLD_WITH_MPS}; native kernels built "
               "${FOURFOLD_BUILD_KERNELS}, used ${FOURFOLD_WITH_KERNELS}")

# One interface target carries libtorch's libraries, include paths and required flags
# (TORCH_CXX_FLAGS holds the C++ ABI define) to every layer that faces libtorch.
add_library(fourfold_torch INTERFACE)
add_library(fourfold::torch ALIAS fourfold_torch)
target_link_libraries(fourfold_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(fourfold_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
separate_arguments(_fourfold_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(fourfold_torch INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_fourfold_torch_flags}>)
target_compile_definitions(fourfold_torch INTERFACE
    FOURFOLD_WITH_CUDA=$<BOOL:${FOURFOLD_WITH_CUDA}>
    FOURFOLD_WITH_MPS=$<BOOL:${FOURFOLD_WITH_MPS}>
    FOURFOLD_WITH_KERNELS=$<BOOL:${FOURFOLD_WITH_KERNELS}>
    FOURFOLD_BUILD_KERNELS=$<BOOL:${FOURFOLD_BUILD_KERNELS}>)
if(FOURFOLD_WITH_CUDA)
    target_link_libraries(fourfold_torch INTERFACE CUDA::cudart)
endif()
