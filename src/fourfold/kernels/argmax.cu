// argmax kernel (see argmax.hpp): a grid-stride pass per thread, a warp and block merge, the
// block's pair to the workspace, and the last block (threadfence + counter) merges the pairs.
#include "fourfold/kernels/argmax.hpp"
#include "fourfold/kernels/elements.cuh"

namespace fourfold::kernels {
namespace {

using namespace device;

struct best {
    float v;
    int i; // -1: nothing seen
};

// Whether (a, ia) beats (b, ib): NaN above everything, then the larger, then the first.
__device__ __forceinline__ bool beats(float a, int ia, float b, int ib) {
    if (ib < 0)
        return ia >= 0;
    if (ia < 0)
        return false;
    const bool na = a != a, nb = b != b;
    if (na || nb)
        return na && (!nb || ia < ib);
    return a > b || (a == b && ia < ib);
}

__device__ __forceinline__ best pick(best a, best b) {
    return beats(b.v, b.i, a.v, a.i) ? b : a;
}

__device__ __forceinline__ best block_best(best r, best* scratch) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#pragma unroll
    for (int off = 16; off > 0; off /= 2)
        r = pick(r, best{__shfl_xor_sync(0xffffffffu, r.v, off),
                         __shfl_xor_sync(0xffffffffu, r.i, off)});
    if (lane == 0)
        scratch[warp] = r;
    __syncthreads();
    if (warp == 0) {
        r = lane < warps ? scratch[lane] : best{0.f, -1};
#pragma unroll
        for (int off = 16; off > 0; off /= 2)
            r = pick(r, best{__shfl_xor_sync(0xffffffffu, r.v, off),
                             __shfl_xor_sync(0xffffffffu, r.i, off)});
    }
    return r; // valid in thread 0
}

template <typename T> __global__ void argmax_kernel(argmax_args a) {
    __shared__ best scratch[32];
    __shared__ bool last;
    const T* x = static_cast<const T*>(a.x);
    allow_dependents();
    dependency_wait(); // x and *at are the launches before's; the counter is touched after it
    best r{0.f, -1};
    // 8 values a thread a round, all loaded before the first comparison (one load round, not
    // eight, for a 128256-value vocabulary)
    constexpr int per = 8;
    const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * per;
    for (std::int64_t base = blockIdx.x * stride + threadIdx.x; base < a.n;
         base += stride * gridDim.x) {
        float v[per];
#pragma unroll
        for (int k = 0; k < per; ++k) {
            const std::int64_t i = base + static_cast<std::int64_t>(k) * blockDim.x;
            v[k] = i < a.n ? element<T>::to_float(x[i]) : 0.f;
        }
#pragma unroll
        for (int k = 0; k < per; ++k) {
            const std::int64_t i = base + static_cast<std::int64_t>(k) * blockDim.x;
            if (i < a.n)
                r = pick(r, best{v[k], static_cast<int>(i)});
        }
    }
    r = block_best(r, scratch);
    auto* counter = static_cast<unsigned int*>(a.workspace);
    auto* pairs = reinterpret_cast<best*>(static_cast<char*>(a.workspace) + 16);
    if (gridDim.x == 1) {
        if (threadIdx.x == 0) {
            a.tokens[a.at ? *a.at + 1 : 0] = r.i;
            if (a.advance)
                *a.advance += 1;
        }
        return;
    }
    if (threadIdx.x == 0) {
        pairs[blockIdx.x] = r;
        __threadfence();
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    best m{0.f, -1};
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) {
        const best o{__ldcg(&pairs[b].v), __ldcg(&pairs[b].i)};
        m = pick(m, o);
    }
    __syncthreads(); // scratch is reused
    m = block_best(m, scratch);
    if (threadIdx.x == 0) {
        a.tokens[a.at ? *a.at + 1 : 0] = m.i;
        if (a.advance)
            *a.advance += 1;
        *counter = 0; // as the next launch (a graph replay) expects it
    }
}

} // namespace

launch_status launch_argmax(const argmax_plan& p, const argmax_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    if (p.blocks > 1 && !a.workspace)
        return invalid("argmax: a plan of several blocks needs its workspace");
    return by_element(a.type, [&](auto t) {
        return status_of(launch_serialised_after(
            argmax_kernel<decltype(t)>, dim3(static_cast<unsigned>(p.blocks)),
            dim3(static_cast<unsigned>(p.threads)), stream, p.dependent_launch, a));
    });
}

} // namespace fourfold::kernels
