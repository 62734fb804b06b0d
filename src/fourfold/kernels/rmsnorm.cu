// RMSNorm kernels (see rmsnorm.hpp): a block a row; thread i holds columns i, i + threads, ...
// (coalesced), so the row is read once, summed in fp32, scaled and written.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/reduce.cuh"
#include "fourfold/kernels/rmsnorm.hpp"

namespace fourfold::kernels {
namespace {

using namespace device;

template <typename T, int PER> __global__ void rmsnorm_kernel(rmsnorm_args a) {
    __shared__ float scratch[32];
    const std::int64_t row = blockIdx.x;
    const int tid = threadIdx.x, threads = blockDim.x;
    const T* x = static_cast<const T*>(a.x);
    bool zero = false;
    if (a.index) {
        const std::int64_t i = a.index[(a.at ? *a.at : 0) + row];
        zero = i < 0 || i >= a.gather_rows;
        x += (zero ? 0 : i) * a.ld_x;
    } else {
        x += row * a.ld_x;
    }
    const T* r = a.residual ? static_cast<const T*>(a.residual) + row * a.ld_residual : nullptr;
    float v[PER];
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const std::int64_t col = static_cast<std::int64_t>(c) * threads + tid;
        float f = 0.f;
        if (col < a.cols && !zero) {
            f = element<T>::to_float(x[col]);
            if (r) // rounded as the stored residual stream is
                f = element<T>::to_float(element<T>::from_float(f + element<T>::to_float(r[col])));
        }
        v[c] = f;
        ss += f * f;
    }
    ss = block_sum(ss, scratch);
    const float inv = rsqrtf(ss / static_cast<float>(a.cols) + static_cast<float>(a.eps));
    const T* w = static_cast<const T*>(a.weight);
    T* out = a.out ? static_cast<T*>(a.out) + row * a.ld_out : nullptr;
    T* normed = static_cast<T*>(a.normed) + row * a.ld_normed;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const std::int64_t col = static_cast<std::int64_t>(c) * threads + tid;
        if (col < a.cols) {
            if (out)
                out[col] = element<T>::from_float(v[c]);
            normed[col] = element<T>::from_float(v[c] * inv * element<T>::to_float(w[col]));
        }
    }
}

template <typename T>
launch_status launch_typed(const rmsnorm_plan& p, const rmsnorm_args& a, stream_t stream) {
    const dim3 grid(static_cast<unsigned>(p.blocks)), block(static_cast<unsigned>(p.threads));
    switch (p.per_thread) {
    case 1:
        rmsnorm_kernel<T, 1><<<grid, block, 0, stream>>>(a);
        break;
    case 2:
        rmsnorm_kernel<T, 2><<<grid, block, 0, stream>>>(a);
        break;
    case 4:
        rmsnorm_kernel<T, 4><<<grid, block, 0, stream>>>(a);
        break;
    case 8:
        rmsnorm_kernel<T, 8><<<grid, block, 0, stream>>>(a);
        break;
    case 16:
        rmsnorm_kernel<T, 16><<<grid, block, 0, stream>>>(a);
        break;
    default:
        return invalid("rmsnorm: per_thread must be 1, 2, 4, 8 or 16");
    }
    return status_of(cudaGetLastError());
}

} // namespace

launch_status launch_rmsnorm(const rmsnorm_plan& p, const rmsnorm_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
