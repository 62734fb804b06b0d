// Softmax kernels (see softmax.hpp). Two passes over a row, one launch:
//   1. every thread loads its vectors (keeping up to CACHE of them in registers), folding them
//      into a running (max m, sum s of exp(x - m));
//   2. the pairs are merged over the warp, the block and the row's other blocks (a cluster's
//      distributed shared memory, or for a few long rows a cooperative grid's global memory),
//      then each thread writes exp(x - M) / S for its vectors.
// Special values follow the arithmetic of stock softmax: a NaN anywhere in a row makes the row
// NaN; a row of -inf has M = -inf and is NaN (exp(-inf - -inf)); a +inf makes the sum NaN.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/reduce.cuh"
#include "fourfold/kernels/softmax.hpp"

#include <cooperative_groups.h>
#include <utility>

namespace fourfold::kernels {
namespace {

namespace cg = cooperative_groups;
using namespace device;

struct alignas(8) running { // 8-byte aligned: the grid path loads a pair as one float2
    float m;                // max so far (never NaN)
    float s;                // sum of exp(x - m) so far; NaN once a NaN was seen
};

// s * exp(m - M), with the empty pair (s == 0: nothing but -inf seen) contributing nothing.
__device__ __forceinline__ float fast_exp(float x);
__device__ __forceinline__ float rescaled(float s, float m, float big) {
    return s == 0.f ? 0.f : s * fast_exp(m - big);
}

__device__ __forceinline__ running merge(running a, running b) {
    const float big = fmaxf(a.m, b.m);
    return {big, rescaled(a.s, a.m, big) + rescaled(b.s, b.m, big)};
}

template <int VEC> __device__ __forceinline__ void fold(running& r, const float (&f)[VEC]) {
    float vmax = f[0];
    bool nan = f[0] != f[0];
#pragma unroll
    for (int j = 1; j < VEC; ++j) {
        vmax = fmaxf(vmax, f[j]);
        nan |= f[j] != f[j];
    }
    const float big = fmaxf(r.m, vmax);
    if (big != -CUDART_INF_F) {
        float acc = 0.f;
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            acc += fast_exp(f[j] - big);
        r.s = rescaled(r.s, r.m, big) + acc;
        r.m = big;
    }
    if (nan)
        r.s = CUDART_NAN_F;
}

__device__ __forceinline__ running warp_merge(running r) {
#pragma unroll
    for (int off = 16; off > 0; off /= 2) {
        running o{__shfl_xor_sync(0xffffffffu, r.m, off), __shfl_xor_sync(0xffffffffu, r.s, off)};
        r = merge(r, o);
    }
    return r;
}

// The block's pair from each thread's: merged over the warp's lanes by the caller, then over
// the warps through `warp_part` (one barrier); the block's pair is in every lane of warp 0, the
// other warps get their own back.
__device__ __forceinline__ running block_merge(running r, running (&warp_part)[32]) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    if (lane == 0)
        warp_part[warp] = r;
    __syncthreads();
    if (warp != 0)
        return r;
    return warp_merge(lane < warps ? warp_part[lane] : running{-CUDART_INF_F, 0.f});
}

// exp(x) as one MUFU.EX2 on x * log2(e): relative error a few ulp plus |x| * 2^-24 from the
// product's rounding, far inside fp32's tolerance (1e-4) for the arguments softmax meets
// (x - max <= 0, where the largest errors fall on the smallest, least significant outputs).
__device__ __forceinline__ float fast_exp(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x * 1.4426950408889634f));
    return y;
}

// What one thread holds between the passes: its cached vectors' exp(x - m) as floats (one
// exponential per element), m its own maximum over them, and the running pair of the rest.
template <int VEC, int CACHE> struct thread_part {
    float e[CACHE][VEC];
    float m; // the maximum over the cached elements (-inf when none)
};

// Pass 1 over vectors [first, end) stepping by `step`: the first CACHE are loaded together,
// reduced to their maximum, then turned into exponentials once; the rest (rows longer than
// the registers) are folded into a running pair and read again in pass 2.
template <typename T, int VEC, int CACHE>
__device__ __forceinline__ running pass_one(const typename packet<T, VEC>::raw* row,
                                            std::int64_t first, std::int64_t end, int step,
                                            thread_part<VEC, CACHE>& part) {
    using P = packet<T, VEC>;
    typename P::raw raw[CACHE];
#pragma unroll
    for (int c = 0; c < CACHE; ++c) {
        const std::int64_t v = first + static_cast<std::int64_t>(c) * step;
        if (v < end)
            raw[c] = P::load(row + v);
    }
    float m = -CUDART_INF_F;
    bool nan = false;
#pragma unroll
    for (int c = 0; c < CACHE; ++c) {
        const std::int64_t v = first + static_cast<std::int64_t>(c) * step;
        if (v < end) {
            P::unpack(raw[c], part.e[c]);
#pragma unroll
            for (int j = 0; j < VEC; ++j) {
                m = fmaxf(m, part.e[c][j]);
                nan |= part.e[c][j] != part.e[c][j];
            }
        }
    }
    part.m = m;
    float s = 0.f;
    // exp(x - m) of a cached element; none when all of them are -inf (m = -inf)
    const float shift = m == -CUDART_INF_F ? 0.f : m;
#pragma unroll
    for (int c = 0; c < CACHE; ++c) {
        const std::int64_t v = first + static_cast<std::int64_t>(c) * step;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
            const float e = v < end ? fast_exp(part.e[c][j] - shift) : 0.f;
            part.e[c][j] = e;
            s += e;
        }
    }
    running r{m, nan ? CUDART_NAN_F : s};
    for (std::int64_t v = first + static_cast<std::int64_t>(CACHE) * step; v < end; v += step) {
        float f[VEC];
        P::unpack(P::load(row + v), f);
        fold<VEC>(r, f);
    }
    return r;
}

// out = exp(x - M) / S: the cached exponentials scaled once by exp(m - M) / S; a row whose
// maximum is -inf is NaN, as in stock (exp(-inf - -inf)).
template <typename T, int VEC, int CACHE>
__device__ __forceinline__ void pass_two(const typename packet<T, VEC>::raw* row,
                                         typename packet<T, VEC>::raw* out, std::int64_t first,
                                         std::int64_t end, int step, running total,
                                         const thread_part<VEC, CACHE>& part) {
    using P = packet<T, VEC>;
    const float inv = 1.f / total.s;
    const float scale = total.m == -CUDART_INF_F  ? CUDART_NAN_F
                        : part.m == -CUDART_INF_F ? 0.f
                                                  : fast_exp(part.m - total.m) * inv;
#pragma unroll
    for (int c = 0; c < CACHE; ++c) {
        const std::int64_t v = first + static_cast<std::int64_t>(c) * step;
        if (v < end) {
            float f[VEC];
#pragma unroll
            for (int j = 0; j < VEC; ++j)
                f[j] = part.e[c][j] * scale;
            out[v] = P::pack(f);
        }
    }
    for (std::int64_t v = first + static_cast<std::int64_t>(CACHE) * step; v < end; v += step) {
        float f[VEC];
        P::unpack(P::load(row + v), f);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            f[j] = fast_exp(f[j] - total.m) * inv;
        out[v] = P::pack(f);
    }
}

// The start of a dependent launch (plan.dependent): let the next kernel launch, bring the
// thread's first CACHE vectors' lines into L2 while the kernel before may still run (a hint
// through the coherent L2: nothing read into a register), then wait for it: the logits may be
// its output.
template <typename Raw, int CACHE>
__device__ __forceinline__ void start_dependent(const Raw* row, std::int64_t first,
                                                std::int64_t end, int step) {
    allow_dependents();
    constexpr int per_line = static_cast<int>(128 / sizeof(Raw)); // Raw is 2 to 16 bytes
#pragma unroll
    for (int c = 0; c < CACHE; ++c) {
        const std::int64_t v = first + static_cast<std::int64_t>(c) * step;
        if (v < end && v % per_line == 0)
            prefetch_l2(row + v);
    }
    dependency_wait();
}

// One warp per row (short rows); 8 rows per 256-thread block.
template <typename T, int VEC, int CACHE>
__global__ void __launch_bounds__(256, 1)
    softmax_warp_rows(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows,
                      std::int64_t nvec, std::int64_t ld_x, std::int64_t ld_y) {
    using P = packet<T, VEC>;
    const std::int64_t row =
        static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (row >= rows)
        return; // the whole warp leaves together
    const int lane = threadIdx.x % 32;
    const auto* xr = reinterpret_cast<const typename P::raw*>(x + row * ld_x);
    auto* yr = reinterpret_cast<typename P::raw*>(y + row * ld_y);
    start_dependent<typename P::raw, CACHE>(xr, lane, nvec, 32);
    thread_part<VEC, CACHE> part;
    const running total = warp_merge(pass_one<T, VEC, CACHE>(xr, lane, nvec, 32, part));
    pass_two<T, VEC, CACHE>(xr, yr, lane, nvec, 32, total, part);
}

// A cluster of `gridDim.x / rows` blocks per row; block b of a cluster takes vectors
// [b * chunk, (b + 1) * chunk). The partial pairs meet in distributed shared memory.
template <typename T, int VEC, int CACHE>
__global__ void __launch_bounds__(512)
    softmax_cluster_rows(const T* __restrict__ x, T* __restrict__ y, std::int64_t nvec,
                         std::int64_t chunk, std::int64_t ld_x, std::int64_t ld_y) {
    using P = packet<T, VEC>;
    __shared__ running warp_part[32];
    __shared__ running block_part;
    cg::cluster_group cluster = cg::this_cluster();
    const int rank = static_cast<int>(cluster.block_rank());
    const int size = static_cast<int>(cluster.num_blocks());
    const std::int64_t row = blockIdx.x / size;
    const std::int64_t begin = rank * chunk;
    const std::int64_t end = begin + chunk < nvec ? begin + chunk : nvec;
    const auto* xr = reinterpret_cast<const typename P::raw*>(x + row * ld_x);
    auto* yr = reinterpret_cast<typename P::raw*>(y + row * ld_y);
    const int lane = threadIdx.x % 32;
    start_dependent<typename P::raw, CACHE>(xr, begin + threadIdx.x, end,
                                            static_cast<int>(blockDim.x));

    thread_part<VEC, CACHE> part;
    const running r =
        block_merge(warp_merge(pass_one<T, VEC, CACHE>(xr, begin + threadIdx.x, end,
                                                       static_cast<int>(blockDim.x), part)),
                    warp_part);
    if (threadIdx.x == 0)
        block_part = r;
    cluster.sync(); // every block's pair is written
    // each warp merges the cluster's pairs itself: no further barrier inside the block
    running total{-CUDART_INF_F, 0.f};
    if (lane < size)
        total = *cluster.map_shared_rank(&block_part, lane);
    // this thread is done with the other blocks' shared memory: say so now, wait only at the
    // end (no block may leave while another still reads its pair), so the writes overlap it
    auto done_reading = cluster.barrier_arrive();
    total = warp_merge(total);
    pass_two<T, VEC, CACHE>(xr, yr, begin + threadIdx.x, end, static_cast<int>(blockDim.x), total,
                            part);
    cluster.barrier_wait(std::move(done_reading));
}

// The grid path's exchange: one (max, sum) pair a block, and a self-resetting barrier per row
// (two arrival counts and a generation), in the module's global memory: zero when the module
// loads, and every launch leaves the counts at zero again, so a replayed graph finds them as
// the first launch did. One workspace a device: launches of this path must not run
// concurrently (fourfold's calls are ordered on one stream).
__device__ running g_grid_part[k_softmax_grid_max_blocks];
__device__ unsigned g_grid_arrived[k_softmax_grid_max_rows][2];
__device__ unsigned g_grid_generation[k_softmax_grid_max_rows];

__device__ __forceinline__ void grid_row_barrier(std::int64_t row, int blocks) {
    grid_barrier(g_grid_arrived[row], &g_grid_generation[row], blocks);
}

// `blocks` blocks per row over a cooperative grid (every block resident at once, so the
// barrier cannot wait on a block that has not started): a few long rows over the whole
// device, where a cluster would hold a row to one GPC's 16 SMs. Block b of a row takes vectors
// [b * chunk, (b + 1) * chunk); the pairs meet in global memory (L2).
template <typename T, int VEC, int CACHE>
__global__ void __launch_bounds__(512, 1)
    softmax_grid_rows(const T* __restrict__ x, T* __restrict__ y, std::int64_t nvec,
                      std::int64_t chunk, std::int64_t ld_x, std::int64_t ld_y, int blocks) {
    using P = packet<T, VEC>;
    __shared__ running warp_part[32];
    const std::int64_t row = blockIdx.x / blocks;
    const int part_index = static_cast<int>(blockIdx.x % blocks);
    const std::int64_t begin = part_index * chunk;
    const std::int64_t end = begin + chunk < nvec ? begin + chunk : nvec;
    const auto* xr = reinterpret_cast<const typename P::raw*>(x + row * ld_x);
    auto* yr = reinterpret_cast<typename P::raw*>(y + row * ld_y);
    const int lane = threadIdx.x % 32;

    thread_part<VEC, CACHE> part;
    const running r =
        block_merge(warp_merge(pass_one<T, VEC, CACHE>(xr, begin + threadIdx.x, end,
                                                       static_cast<int>(blockDim.x), part)),
                    warp_part);
    if (threadIdx.x == 0) {
        g_grid_part[blockIdx.x] = r;
        grid_row_barrier(row, blocks);
    }
    __syncthreads(); // thread 0 has seen every pair of the row
    // each warp merges the row's pairs itself (from L2: written by other SMs in this launch)
    running total{-CUDART_INF_F, 0.f};
    const running* row_parts = g_grid_part + row * blocks;
    for (int b = lane; b < blocks; b += 32) {
        const float2 pair = __ldcg(reinterpret_cast<const float2*>(row_parts + b));
        total = merge(total, running{pair.x, pair.y});
    }
    total = warp_merge(total);
    pass_two<T, VEC, CACHE>(xr, yr, begin + threadIdx.x, end, static_cast<int>(blockDim.x), total,
                            part);
}

template <typename T, int VEC, int CACHE>
launch_status launch_typed(const softmax_plan& p, const softmax_args& a, stream_t stream) {
    const auto* x = static_cast<const T*>(a.x);
    auto* y = static_cast<T*>(a.y);
    const std::int64_t nvec = a.cols / VEC;
    if (p.kind == softmax_plan::path::warp_per_row) {
        const int rows_per_block = p.threads / 32;
        const auto blocks = static_cast<unsigned>((a.rows + rows_per_block - 1) / rows_per_block);
        return status_of(launch_serialised_after(softmax_warp_rows<T, VEC, CACHE>, dim3(blocks),
                                                 dim3(static_cast<unsigned>(p.threads)), stream,
                                                 p.dependent, x, y, a.rows, nvec, a.ld_x, a.ld_y));
    }
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(static_cast<unsigned>(a.rows * p.cluster));
    config.blockDim = dim3(static_cast<unsigned>(p.threads));
    config.stream = stream;
    cudaLaunchAttribute attr[1];
    if (p.kind == softmax_plan::path::grid_per_row) {
        attr[0].id = cudaLaunchAttributeCooperative;
        attr[0].val.cooperative = 1;
        config.attrs = attr;
        config.numAttrs = 1;
        return status_of(cudaLaunchKernelEx(&config, softmax_grid_rows<T, VEC, CACHE>, x, y, nvec,
                                            p.chunk_vectors, a.ld_x, a.ld_y, p.cluster));
    }
    return status_of(launch_cluster_after(softmax_cluster_rows<T, VEC, CACHE>, config.gridDim,
                                          config.blockDim, static_cast<int>(p.cluster), stream,
                                          p.dependent, x, y, nvec, p.chunk_vectors, a.ld_x,
                                          a.ld_y));
}

template <typename T, int VEC>
launch_status by_cache(const softmax_plan& p, const softmax_args& a, stream_t stream) {
    switch (p.cache) {
    case 1:
        return launch_typed<T, VEC, 1>(p, a, stream);
    case 2:
        return launch_typed<T, VEC, 2>(p, a, stream);
    case 4:
        return launch_typed<T, VEC, 4>(p, a, stream);
    default:
        return launch_typed<T, VEC, 8>(p, a, stream);
    }
}

template <typename T>
launch_status by_vec(const softmax_plan& p, const softmax_args& a, stream_t stream) {
    constexpr int vw = 16 / sizeof(T);
    if (p.vec == vw)
        return by_cache<T, vw>(p, a, stream);
    // the scalar path: alignment or a ragged width, never the fast case
    return launch_typed<T, 1, 8>(p, a, stream);
}

// Every cluster kernel, for the one-time opt-in to clusters of more than 8 blocks.
template <typename T> void allow_large_clusters(bool& ok) {
    constexpr int vw = 16 / sizeof(T);
    const void* kernels[] = {reinterpret_cast<const void*>(softmax_cluster_rows<T, 1, 8>),
                             reinterpret_cast<const void*>(softmax_cluster_rows<T, vw, 1>),
                             reinterpret_cast<const void*>(softmax_cluster_rows<T, vw, 2>),
                             reinterpret_cast<const void*>(softmax_cluster_rows<T, vw, 4>),
                             reinterpret_cast<const void*>(softmax_cluster_rows<T, vw, 8>)};
    for (const void* k : kernels)
        ok &= cudaFuncSetAttribute(k, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) ==
              cudaSuccess;
}

} // namespace

int softmax_cluster_limit() {
    bool ok = true;
    allow_large_clusters<float>(ok);
    allow_large_clusters<__half>(ok);
    allow_large_clusters<__nv_bfloat16>(ok);
    if (!ok) {
        (void)cudaGetLastError();
        return 8;
    }
    // can 16 blocks of the largest configuration (512 threads, the bf16 kernel's registers)
    // be resident as one cluster?
    cudaLaunchConfig_t config{};
    config.gridDim = dim3(16);
    config.blockDim = dim3(512);
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = 16;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    config.attrs = attr;
    config.numAttrs = 1;
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, softmax_cluster_rows<__nv_bfloat16, 8, 8>,
                                       &config) != cudaSuccess ||
        clusters < 1) {
        (void)cudaGetLastError();
        return 8;
    }
    return 16;
}

launch_status launch_softmax(const softmax_plan& p, const softmax_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return by_vec<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
