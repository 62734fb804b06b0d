#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/scale.hpp"

namespace fourfold::kernels {
namespace {

using namespace device;

template <typename T>
__global__ void scale_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n,
                             float alpha) {
    for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
        y[i] = element<T>::from_float(alpha * element<T>::to_float(x[i]));
}

template <typename T>
launch_status launch_typed(const void* x, void* y, std::int64_t n, float alpha, stream_t stream) {
    const std::int64_t blocks = n / 256 + 1 < 4096 ? n / 256 + 1 : 4096;
    scale_kernel<T><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), n, alpha);
    return status_of(cudaGetLastError());
}

} // namespace

launch_status launch_scale(const void* x, void* y, std::int64_t n, float alpha, elem type,
                           stream_t stream) {
    return by_element(type,
                      [&](auto t) { return launch_typed<decltype(t)>(x, y, n, alpha, stream); });
}

} // namespace fourfold::kernels
