#include "fourfold/kernels/elements.cuh"

namespace fourfold::kernels {

bool compiled() { return true; }

device_limits query_device(int index) {
    device_limits d;
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) return d;
    d.sm_count = prop.multiProcessorCount;
    d.max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
    d.max_smem_per_block = static_cast<int>(prop.sharedMemPerBlockOptin);
    d.cc_major = prop.major;
    d.cc_minor = prop.minor;
    return d;
}

} // namespace fourfold::kernels
