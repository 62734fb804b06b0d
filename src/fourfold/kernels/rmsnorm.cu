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
    const T* w = static_cast<const T*>(a.weight);
    allow_dependents();
    { // the weight (never the launch before's output) into L2 while that launch may still run
        const auto* wb = reinterpret_cast<const char*>(w);
        const std::int64_t bytes = a.cols * static_cast<std::int64_t>(sizeof(T));
        for (std::int64_t off = tid * std::int64_t{128}; off < bytes;
             off += std::int64_t{128} * threads)
            prefetch_l2(wb + off);
        if (tid == 0)
            prefetch_l2(wb + bytes - 1); // the last line, where the weight is not line-aligned
    }
    dependency_wait(); // x, the residual, the index and *at may be the launch before's
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
    float v[PER], wv[PER];
    float ss = 0.f;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const std::int64_t col = static_cast<std::int64_t>(c) * threads + tid;
        // the weight with the row, in the same round trip (not after the sum)
        wv[c] = col < a.cols ? element<T>::to_float(w[col]) : 0.f;
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
    T* out = a.out ? static_cast<T*>(a.out) + row * a.ld_out : nullptr;
    T* normed = static_cast<T*>(a.normed) + row * a.ld_normed;
#pragma unroll
    for (int c = 0; c < PER; ++c) {
        const std::int64_t col = static_cast<std::int64_t>(c) * threads + tid;
        if (col < a.cols) {
            if (out)
                out[col] = element<T>::from_float(v[c]);
            normed[col] = element<T>::from_float(v[c] * inv * wv[c]);
        }
    }
}

template <typename T>
launch_status launch_typed(const rmsnorm_plan& p, const rmsnorm_args& a, stream_t stream) {
    const dim3 grid(static_cast<unsigned>(p.blocks)), block(static_cast<unsigned>(p.threads));
    const bool dep = p.dependent_launch;
    switch (p.per_thread) {
    case 1:
        return status_of(
            launch_serialised_after(rmsnorm_kernel<T, 1>, grid, block, stream, dep, a));
    case 2:
        return status_of(
            launch_serialised_after(rmsnorm_kernel<T, 2>, grid, block, stream, dep, a));
    case 4:
        return status_of(
            launch_serialised_after(rmsnorm_kernel<T, 4>, grid, block, stream, dep, a));
    case 8:
        return status_of(
            launch_serialised_after(rmsnorm_kernel<T, 8>, grid, block, stream, dep, a));
    case 16:
        return status_of(
            launch_serialised_after(rmsnorm_kernel<T, 16>, grid, block, stream, dep, a));
    default:
        return invalid("rmsnorm: per_thread must be 1, 2, 4, 8 or 16");
    }
}

} // namespace

launch_status launch_rmsnorm(const rmsnorm_plan& p, const rmsnorm_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
