#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/fault.hpp"

namespace fourfold::kernels {
namespace {

__global__ void out_of_bounds_kernel(float* data, std::int64_t offset, float value) {
    data[offset] = value;
}

} // namespace

launch_status launch_out_of_bounds_write(float* data, std::int64_t offset, float value,
                                         stream_t stream) {
    out_of_bounds_kernel<<<1, 1, 0, stream>>>(data, offset, value);
    return status_of(cudaGetLastError());
}

malloc_probe try_device_malloc(std::size_t bytes) {
    malloc_probe p;
    (void)cudaMemGetInfo(&p.free_bytes, &p.total_bytes);
    void* ptr = nullptr;
    const auto rc = cudaMalloc(&ptr, bytes);
    if (rc == cudaSuccess)
        (void)cudaFree(ptr);
    else
        (void)cudaGetLastError(); // an allocation failure is not sticky: clear it
    p.status = status_of(rc);
    return p;
}

} // namespace fourfold::kernels
