#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/softmax.hpp"

namespace fourfold::kernels {

bool compiled() {
    return true;
}

device_limits query_device(int index) {
    device_limits d;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, index) != cudaSuccess)
        return d;
    d.sm_count = prop.multiProcessorCount;
    d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    d.max_smem_per_block = static_cast<int>(prop.sharedMemPerBlockOptin);
    d.max_smem_per_sm = static_cast<int>(prop.sharedMemPerMultiprocessor);
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    d.cooperative_launch = prop.cooperativeLaunch != 0;
    if (d.clusters()) {
        int current = 0;
        cudaGetDevice(&current);
        cudaSetDevice(index);
        d.max_cluster_blocks = softmax_cluster_limit();
        cudaSetDevice(current);
    }
    return d;
}

} // namespace fourfold::kernels
