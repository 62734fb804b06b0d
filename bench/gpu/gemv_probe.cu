// Where does the one-token GEMV's fixed cost go? Session 24 fitted the balanced kernel at 5.5 µs
// + bytes at 4.54 TB/s and cuBLAS at 1.2 µs + 4.40 TB/s (H200, graph over rotated weights). This
// standalone probe (no fourfold build) times, in fourfold's default op mode (a CUDA graph of calls
// over rotated weight copies whose total exceeds the 60 MB L2, programmatic edges where the
// kernel is a dependent launch):
//   empty      the balanced kernel's grid (4 x 256 threads an SM) doing nothing: the launch floor
//   balanced   kernels/gemv.cu's gemv_balanced<bf16, 1 token> (copied; with and without PDL)
//   stream     the same partition and loads, the multiply left out (xor of the words)
//   l2_256     balanced with the loads' L2::256B prefetch hint
//   dynamic    rows handed out by an atomic counter (a warp takes the next row when it starts one)
//   cublas     cublasGemmEx, bf16 in and out, fp32 compute (stock's path for a 1-token linear)
// With PROBE_FP8=1 (session 39), over the same bytes and the same partition, why the FP8 GEMV
// moves 3.3 TB/s where bf16 moves 3.9 (the bytes read as 16 e4m3 weights a vector):
//   fp8        kernels/gemv_fp8.cu's arithmetic: e4m3 pairs to f16x2 to floats, 16 FMAs a vector
//              into one sum, x's two 16-byte vectors through L1
//   fp8_x1     the same with one x vector a weight vector (bf16's L1 traffic; not the product)
//   fp8_nox    the conversions alone, the floats summed (no x: not the product)
//   fp8_acc4   fp8 into 4 sums (a quarter of the dependent chain)
//   fp8_r2/r4  fp8 with x's vectors shared by 2 / 4 weight vectors, as 2 / 4 rows a step at the
//              same k would share them (the traffic and work of that kernel; not the product)
//   fp8_h8     fp8 with the weights in 8-byte halves 256 B apart, so that a lane's 8 weights meet
//              x's 16-byte vector of the lane's own index: x's loads contiguous over the warp
//   fp8_xs     fp8 with x converted to floats once a block into shared memory (no unpacking a use;
//              a lane's 64-byte float stride: bank conflicts)
//   fp8_h8xs   fp8_h8's loads with fp8_xs's floats, laid out so a warp reads 32 consecutive float4s
//   fp8_prmt   fp8 with x's bf16 pairs widened by byte permutes (the integer pipe) alone
//   bf16_prmt  balanced (bf16) with the weights' and x's pairs widened so
//   fp8_cs_*   (session 40) column-stationary: a warp holds one slice of x (U KB of a row) as
//              floats in registers down a run of rows, DEPTH rows in flight (kernels/gemv_fp8.cu's
//              gemv_fp8_cs is u2d4); in bf16 mode bf16_cs_* read the same kernel's vectors as
//              8 bf16 weights (u4d2 spills 28 bytes, u2d8 12: a probe's figures, not a product's)
// and, for one plain launch of balanced, each warp's start (after the dependency wait) and end on
// %globaltimer: the spread of the ends is the tail a static partition pays.
// Environment: PROBE_DATA, PROBE_SETS, PROBE_OFFSET_KB, PROBE_ONLY (main says what each does).
//   nvcc -std=c++20 -O3 -gencode arch=compute_90a,code=sm_90a -Isrc bench/gpu/gemv_probe.cu
//   -lcublas
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/fp8_widen.cuh"
#include "fourfold/kernels/reduce.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <string>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__);   \
            std::exit(3);                                                                          \
        }                                                                                          \
    } while (0)

namespace {

using bf16 = __nv_bfloat16;
// fourfold's own dependency_wait, allow_dependents, prefetch_l2, load_streaming and warp_sum
using namespace fourfold::kernels::device;

__device__ __forceinline__ std::uint64_t now_ns() {
    std::uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
template <int HINT> __device__ __forceinline__ uint4 load_w(const uint4* p) {
    if constexpr (HINT == 1) {
        uint4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
        return v;
    } else {
        return load_streaming(p);
    }
}
// x's pairs widened as kernels/gemv_fp8.cu does (fp8_widen.cuh: byte permutes, the integer pipe)
__device__ __forceinline__ void unpack_prmt(const uint4& r, float (&f)[8]) {
    unpack_bf16(r, f);
}
// bf16 pairs widened by __bfloat162float: the compiler's shifts (IMAD.U32 on the FMA pipe)
__device__ __forceinline__ void unpack(const uint4& r, float (&f)[8]) {
    const bf16* e = reinterpret_cast<const bf16*>(&r);
#pragma unroll
    for (int j = 0; j < 8; ++j)
        f[j] = __bfloat162float(e[j]);
}

constexpr int k_cs_max_rows = 512; // a row run of cs_kernel (longer runs: the variant skips)

__global__ void __launch_bounds__(256, 4) empty_kernel(bf16* y) {
    allow_dependents();
    dependency_wait();
    if (threadIdx.x == 0 && blockIdx.x == 0)
        y[0] = __float2bfloat16(1.f);
}

// gemv_balanced<bf16, 1, k_pro_none> of kernels/gemv.cu (bias left out); MODE 1 leaves the
// multiply out (xor of the words); MODE 2-5 read the vectors as 16 e4m3 weights (PROBE_FP8 in
// main: 2 fp8, 3 fp8_x1, 4 fp8_nox, 5 fp8_acc4, 6 fp8_r2, 7 fp8_r4, 8 fp8_h8, 9 fp8_xs, 10
// fp8_h8xs); HINT 1 adds L2::256B to the loads; stamps: a warp's start (after the wait) and end,
// ns.
template <int MODE, int HINT>
__global__ void __launch_bounds__(256, 4)
    balanced(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y,
             std::int64_t n, std::int64_t nkv, std::int64_t ld_w, std::uint64_t* stamps) {
    constexpr int U = 4;
    __shared__ float head[8], tail[8];
    __shared__ int head_row[8], tail_row[8];
    allow_dependents();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::int64_t blocks = gridDim.x;
    const std::int64_t r0 = blockIdx.x * n / blocks;
    const int rows = static_cast<int>((blockIdx.x + 1) * n / blocks - r0);
    const int kv = static_cast<int>(nkv);
    const int steps = (kv + 32 * U - 1) / (32 * U);
    const int total = rows * steps;
    const int lo = static_cast<int>(std::int64_t{warp} * total / 8);
    const int hi = static_cast<int>(std::int64_t{warp + 1} * total / 8);
    if (lane == 0) {
        head_row[warp] = -1;
        tail_row[warp] = -1;
    }
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    const uint4* w0 = reinterpret_cast<const uint4*>(w + r0 * ld_w);
    const std::int64_t ldv = ld_w / 8;
    auto fetch = [&](uint4(&dst)[U], int row, int s) {
        const uint4* wr = w0 + row * ldv;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            if constexpr (MODE == 8 || MODE == 10) {
                // two 8-byte halves 256 B apart: lane l's 8 weights at 8-byte unit j = 2 (s 128
                // + u 32) + h 32 + l match x's 16-byte vector j, so x's loads are contiguous
                const uint2* w8 = reinterpret_cast<const uint2*>(wr);
                const int j0 = 2 * (s * 32 * U + u * 32) + lane;
                uint2 a = make_uint2(0, 0), b = make_uint2(0, 0);
                if (v < kv) {
                    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0, %1}, "
                                 "[%2], %3;"
                                 : "=r"(a.x), "=r"(a.y)
                                 : "l"(w8 + j0), "l"(l2_evict_first_policy()));
                    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v2.u32 {%0, %1}, "
                                 "[%2], %3;"
                                 : "=r"(b.x), "=r"(b.y)
                                 : "l"(w8 + j0 + 32), "l"(l2_evict_first_policy()));
                }
                dst[u] = make_uint4(a.x, a.y, b.x, b.y);
            } else {
                dst[u] = v < kv ? load_w<HINT>(wr + v) : make_uint4(0, 0, 0, 0);
            }
        }
    };
    float acc = 0.f, acc4[4] = {0.f, 0.f, 0.f, 0.f};
    unsigned xr = 0;
    for (int i = lo; i < lo + 2 && i < hi; ++i)
        if (lane % 8 == 0)
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int v = (i % steps) * 32 * U + u * 32 + lane;
                if (v < kv)
                    prefetch_l2(w0 + (i / steps) * ldv + v);
            }
    dependency_wait();
    // MODE 9: x as floats in shared memory, converted once a block (2 kv 8 of them: the fp8 row)
    __shared__ __align__(16) float xs[MODE == 9 || MODE == 10 ? 8192 : 4];
    if constexpr (MODE == 9) {
        for (int i = threadIdx.x; i < 16 * kv; i += blockDim.x)
            xs[i] = __bfloat162float(x[i]);
        __syncthreads();
    }
    if constexpr (MODE == 10) {
        // float4 q of 8-byte unit j (x's floats 8 j + 4 q ..) at float4 (2 (j / 32) + q) 32 + j %
        // 32: a warp's lanes read 32 consecutive float4s
        for (int f = threadIdx.x; f < 4 * kv; f += blockDim.x) {
            const int q = (f / 32) % 2, j = (f / 64) * 32 + f % 32;
            const uint2 b = *reinterpret_cast<const uint2*>(x + 8 * j + 4 * q);
            reinterpret_cast<float4*>(xs)[f] =
                make_float4(__uint_as_float(b.x << 16), __uint_as_float(b.x & 0xffff0000u),
                            __uint_as_float(b.y << 16), __uint_as_float(b.y & 0xffff0000u));
        }
        __syncthreads();
    }
    const std::int64_t gw = std::int64_t{blockIdx.x} * 8 + warp;
    if (stamps && lane == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        stamps[3 * gw] = now_ns();
        stamps[3 * gw + 2] = sm;
    }
    if (lo < hi) {
        int row = lo / steps, s = lo % steps;
        const int first_row = row;
        const bool first_cut = s != 0;
        uint4 cur[U], nxt[U];
        fetch(cur, row, s);
        for (int i = lo; i < hi; ++i) {
            int row2 = row, s2 = s + 1;
            if (s2 == steps) {
                s2 = 0;
                ++row2;
            }
            const bool more = i + 1 < hi;
            if (more)
                fetch(nxt, row2, s2);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int v = s * 32 * U + u * 32 + lane;
                if (v >= kv)
                    continue;
                if constexpr (MODE == 1) {
                    xr ^= cur[u].x ^ cur[u].y ^ cur[u].z ^ cur[u].w;
                } else if constexpr (MODE >= 2 && MODE != 12) {
#pragma unroll
                    for (int half = 0; half < 2; ++half) {
                        float wf[8], xf[8];
                        half == 0 ? unpack_e4m3(cur[u].x, cur[u].y, wf)
                                  : unpack_e4m3(cur[u].z, cur[u].w, wf);
                        if constexpr (MODE == 4) {
#pragma unroll
                            for (int j = 0; j < 8; ++j)
                                acc += wf[j];
                        } else if constexpr (MODE == 10) {
                            // unit j = 2 (s 128 + u 32) + half 32 + lane: block j / 32
                            const int jb = (2 * (s * 32 * U + u * 32)) / 32 + half;
                            const float4* x4 = reinterpret_cast<const float4*>(xs) + 64 * jb + lane;
                            const float4 a = x4[0], b = x4[32];
                            const float xf10[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
                            for (int j = 0; j < 8; ++j)
                                acc = fmaf(wf[j], xf10[j], acc);
                        } else if constexpr (MODE == 9) {
                            const float4* x4 =
                                reinterpret_cast<const float4*>(xs) + 4 * v + 2 * half;
                            const float4 a = x4[0], b = x4[1];
                            const float xf9[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
#pragma unroll
                            for (int j = 0; j < 8; ++j)
                                acc = fmaf(wf[j], xf9[j], acc);
                        } else {
                            // MODE 6 / 7: x's vectors shared by 2 / 4 weight vectors, as R
                            // = 2 / 4 rows a step at the same k would share them (a sum each)
                            const int xu = MODE == 6 ? (u & ~1) : MODE == 7 ? 0 : u;
                            const int xvi = s * 32 * U + xu * 32 + lane;
                            const int j8 = 2 * (s * 32 * U + u * 32) + half * 32 + lane;
                            (MODE == 11 ? unpack_prmt : unpack)(
                                __ldg(xv + (MODE == 8   ? j8
                                            : MODE == 3 ? v
                                                        : 2 * (MODE >= 6 ? xvi : v) + half)),
                                xf);
#pragma unroll
                            for (int j = 0; j < 8; ++j) {
                                if constexpr (MODE == 5)
                                    acc4[j % 4] = fmaf(wf[j], xf[j], acc4[j % 4]);
                                else if constexpr (MODE == 6 || MODE == 7)
                                    acc4[u] = fmaf(wf[j], xf[j], acc4[u]);
                                else
                                    acc = fmaf(wf[j], xf[j], acc);
                            }
                        }
                    }
                } else {
                    float wf[8], xf[8];
                    (MODE == 12 ? unpack_prmt : unpack)(cur[u], wf);
                    (MODE == 12 ? unpack_prmt : unpack)(__ldg(xv + v), xf);
#pragma unroll
                    for (int j = 0; j < 8; ++j)
                        acc = fmaf(wf[j], xf[j], acc);
                }
            }
            if constexpr (MODE == 1)
                acc = __uint_as_float(xr & 0x3f7fffffu);
            if constexpr (MODE == 5 || MODE == 6 || MODE == 7) {
                acc += (acc4[0] + acc4[1]) + (acc4[2] + acc4[3]);
                acc4[0] = acc4[1] = acc4[2] = acc4[3] = 0.f;
            }
            const bool row_ends = s == steps - 1;
            if (row_ends || !more) {
                const bool whole = row_ends && !(row == first_row && first_cut);
                const float sum = warp_sum(acc);
                if (lane == 0) {
                    if (whole)
                        y[r0 + row] = __float2bfloat16(sum);
                    else if (row_ends) {
                        head[warp] = sum;
                        head_row[warp] = row;
                    } else {
                        tail[warp] = sum;
                        tail_row[warp] = row;
                    }
                }
                acc = 0.f;
                xr = 0;
            }
            if (!more)
                break;
#pragma unroll
            for (int u = 0; u < U; ++u)
                cur[u] = nxt[u];
            row = row2;
            s = s2;
        }
    }
    if (stamps && lane == 0)
        stamps[3 * gw + 1] = now_ns();
    __syncthreads();
    const int hr = head_row[warp];
    if (hr >= 0 && lane == 0) {
        float v = head[warp];
        for (int j = warp - 1; j >= 0 && tail_row[j] == hr; --j)
            v += tail[j];
        y[r0 + hr] = __float2bfloat16(v);
    }
}

// fp8_cs (session 40): column-stationary. A warp owns one slice of the row (32 U vectors of 16
// e4m3 weights: U = 4 is 2 KB) for a contiguous run of rows, so its x values are loaded and
// widened to floats once, into registers, before the first row; each row then costs the weights'
// loads, their conversions and the FMAs alone (fp8_nox's work plus the FMAs). DEPTH rows of the
// slice in flight (a ring of registers); the sums of RB = 8 rows reduced across the warp at once
// (9 shuffles where 8 warp_sums take 40). The S = nkv / (32 U) warps of a row run sit in one
// block and add their slices' sums in slice order through shared memory at the end. BF16: the
// vectors read as 8 bf16 weights (8 x values a vector: a slice of U KB holds 8 U floats a lane).
template <int U, int DEPTH, int MINB, bool BF16 = false>
__global__ void __launch_bounds__(256, MINB)
    cs_kernel(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y,
              std::int64_t n, std::int64_t nkv, std::int64_t ld_w, int S) {
    constexpr int RB = 8;
    static_assert(RB % DEPTH == 0, "the ring's slots are static");
    __shared__ float part[8][k_cs_max_rows];
    allow_dependents();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int per_block = 8 / S;
    const int slice = warp % S, gq = warp / S;
    const std::int64_t groups = std::int64_t{gridDim.x} * per_block;
    const std::int64_t g = std::int64_t{blockIdx.x} * per_block + gq;
    const std::int64_t r0 = g * n / groups;
    const int rows = static_cast<int>((g + 1) * n / groups - r0);
    const int kv = static_cast<int>(nkv);
    const std::int64_t ldv = ld_w / 8;
    const uint4* wb = reinterpret_cast<const uint4*>(w) + r0 * ldv;
    const int v0 = slice * 32 * U + lane;
    if (lane % 8 == 0)
        for (int r = 0; r < DEPTH && r < rows; ++r)
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (v0 + 32 * u < kv)
                    prefetch_l2(wb + r * ldv + v0 + 32 * u);
    dependency_wait();
    constexpr int XF = BF16 ? 8 : 16; // x values a weight vector
    float xf[U][XF];
    const uint4* xv = reinterpret_cast<const uint4*>(x);
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int v = v0 + 32 * u;
        const uint4 z = make_uint4(0, 0, 0, 0);
        if constexpr (BF16) {
            unpack_bf16(v < kv ? __ldg(xv + v) : z, &xf[u][0]);
        } else {
            unpack_bf16(v < kv ? __ldg(xv + 2 * v) : z, &xf[u][0]);
            unpack_bf16(v < kv ? __ldg(xv + 2 * v + 1) : z, &xf[u][8]);
        }
    }
    uint4 buf[DEPTH][U];
    const auto fetch = [&](uint4(&dst)[U], int row) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = v0 + 32 * u;
            dst[u] =
                row < rows && v < kv ? load_streaming(wb + row * ldv + v) : make_uint4(0, 0, 0, 0);
        }
    };
#pragma unroll
    for (int d = 0; d < DEPTH; ++d)
        fetch(buf[d], d);
    for (int rb = 0; rb < rows; rb += RB) {
        float acc[RB];
#pragma unroll
        for (int j = 0; j < RB; ++j) {
            float a = 0.f;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const uint4 c = buf[j % DEPTH][u];
                float wf[8];
                if constexpr (BF16) {
                    unpack_bf16(c, wf);
#pragma unroll
                    for (int e = 0; e < 8; ++e)
                        a = fmaf(wf[e], xf[u][e], a);
                } else {
                    unpack_e4m3(c.x, c.y, wf);
#pragma unroll
                    for (int e = 0; e < 8; ++e)
                        a = fmaf(wf[e], xf[u][e], a);
                    unpack_e4m3(c.z, c.w, wf);
#pragma unroll
                    for (int e = 0; e < 8; ++e)
                        a = fmaf(wf[e], xf[u][8 + e], a);
                }
            }
            acc[j] = a;
            fetch(buf[j % DEPTH], rb + j + DEPTH);
        }
        const float sum = warp_sum_8(acc); // lane 4 q: row q of the batch
        const int rr = rb + (lane >> 2);
        if ((lane & 3) == 0 && rr < rows && rr < k_cs_max_rows)
            part[warp][rr] = sum;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < per_block * k_cs_max_rows; i += blockDim.x) {
        const int q = i / k_cs_max_rows, r = i % k_cs_max_rows;
        const std::int64_t gg = std::int64_t{blockIdx.x} * per_block + q;
        const std::int64_t a0 = gg * n / groups;
        if (r < (gg + 1) * n / groups - a0) {
            float sum = 0.f;
            for (int sl = 0; sl < S; ++sl)
                sum += part[q * S + sl][r];
            y[a0 + r] = __float2bfloat16(sum);
        }
    }
}

// Pieces of rows (at most 4 steps of 2 KB, a row's pieces as even as they can be) handed out at
// run time: 8 counters (a warp uses the one of its index in the block, so each takes an eighth of
// the atomics), a warp's first piece its own index, the next taken when a piece starts (lane 0's
// atomic read back one piece later, so its round trip hides under the piece). A row of several
// pieces is summed by fp32 atomics into `acc_rows` (timing only: the order is not fixed).
__global__ void __launch_bounds__(256, 4)
    dynamic_pieces(const bf16* __restrict__ x, const bf16* __restrict__ w, bf16* __restrict__ y,
                   float* __restrict__ acc_rows, std::int64_t n, std::int64_t nkv,
                   std::int64_t ld_w, unsigned* counters, int ppr, int pstep) {
    constexpr int U = 4;
    allow_dependents();
    const int lane = threadIdx.x % 32;
    const int kv = static_cast<int>(nkv);
    const int steps = (kv + 32 * U - 1) / (32 * U);
    const std::int64_t warps = std::int64_t{gridDim.x} * 8; // a multiple of 64
    const std::int64_t gw = std::int64_t{blockIdx.x} * 8 + threadIdx.x / 32;
    const int group = static_cast<int>(gw % 64);
    const std::int64_t units = n * ppr;
    const uint4* xv = reinterpret_cast<const uint4*>(x);
    const std::int64_t ldv = ld_w / 8;
    if (gw >= units)
        return;
    auto first_step = [&](std::int64_t u) { return static_cast<int>(u % ppr) * pstep; };
    auto last_step = [&](std::int64_t u) { return min(steps, first_step(u) + pstep); };
    if (lane % 8 == 0)
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = first_step(gw) * 32 * U + u * 32 + lane;
            if (v < kv)
                prefetch_l2(reinterpret_cast<const uint4*>(w) + (gw / ppr) * ldv + v);
        }
    dependency_wait();
    unsigned pending = 0;
    if (lane == 0)
        pending = atomicAdd(counters + 64 * group, 1u);
    auto fetch = [&](uint4(&dst)[U], std::int64_t row, int s) {
        const uint4* wr = reinterpret_cast<const uint4*>(w) + row * ldv;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            dst[u] = v < kv ? load_w<0>(wr + v) : make_uint4(0, 0, 0, 0);
        }
    };
    std::int64_t unit = gw;
    std::int64_t next = warps + group + 64 * std::int64_t{__shfl_sync(0xffffffffu, pending, 0)};
    if (lane == 0)
        pending = atomicAdd(counters + 64 * group, 1u);
    int s = first_step(unit), end = last_step(unit);
    float acc = 0.f;
    uint4 cur[U], nxt[U];
    fetch(cur, unit / ppr, s);
    while (true) {
        std::int64_t unit2 = unit;
        int s2 = s + 1;
        const bool switching = s2 == end;
        if (switching) {
            unit2 = next;
            s2 = unit2 < units ? first_step(unit2) : 0;
        }
        const bool more = unit2 < units;
        if (more)
            fetch(nxt, unit2 / ppr, s2);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            if (v >= kv)
                continue;
            float wf[8], xf[8];
            unpack(cur[u], wf);
            unpack(__ldg(xv + v), xf);
#pragma unroll
            for (int j = 0; j < 8; ++j)
                acc = fmaf(wf[j], xf[j], acc);
        }
        if (switching) {
            const float sum = warp_sum(acc);
            if (lane == 0) {
                if (ppr == 1)
                    y[unit] = __float2bfloat16(sum);
                else
                    atomicAdd(acc_rows + unit / ppr, sum);
            }
            acc = 0.f;
        }
        if (!more)
            break;
        if (switching) {
            next = warps + group + 64 * std::int64_t{__shfl_sync(0xffffffffu, pending, 0)};
            if (lane == 0)
                pending = atomicAdd(counters + 64 * group, 1u);
            unit = unit2;
            end = last_step(unit);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
            cur[u] = nxt[u];
        s = s2;
    }
}

// bf16 weights from a hash of the index: about +-0.05, random signs and mantissas
// the bytes read as e4m3 are never NaN (0x7f, 0xff become 0x7e, 0xfe): fp8's and the
// column-stationary kernels' outputs comparable
__global__ void no_e4m3_nan(std::uint8_t* w, std::int64_t count) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
         i += std::int64_t{gridDim.x} * blockDim.x)
        if ((w[i] & 0x7f) == 0x7f)
            w[i] ^= 1;
}

__global__ void fill_random(std::uint16_t* w, std::int64_t count, unsigned seed) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < count;
         i += std::int64_t{gridDim.x} * blockDim.x) {
        unsigned h = static_cast<unsigned>(i) * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        w[i] = static_cast<std::uint16_t>((h & 0x807f) | (0x3c00 + ((h >> 8) & 0x300)));
    }
}

// fourfold's launch (a programmatic dependent launch where pdl), 256 threads a block
template <typename... P, typename... A>
void launch(void (*k)(P...), int grid, bool pdl, cudaStream_t st, A... a) {
    CK(fourfold::kernels::launch_serialised_after(k, dim3(grid), dim3(256), st, pdl, a...));
}

struct shape {
    std::int64_t n, k;
};

} // namespace

int main() {
    int sms = 0;
    CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const int grid = sms * 4;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS)
        return 3;
    cublasSetStream(h, st);
    void* ws = nullptr;
    CK(cudaMalloc(&ws, 32 << 20));
    cublasSetWorkspace(h, ws, 32 << 20);
    const std::int64_t pool_bytes = std::int64_t{2300} << 20; // the rotation's weights
    bf16 *pool = nullptr, *x = nullptr, *y = nullptr;
    CK(cudaMalloc(&pool, pool_bytes));
    CK(cudaMalloc(&x, 64 << 10));
    CK(cudaMalloc(&y, 1 << 20));
    unsigned* counters = nullptr;
    constexpr int k_max_calls = 64;
    CK(cudaMalloc(&counters, 4096 * k_max_calls * sizeof(unsigned)));
    float* acc_rows = nullptr;
    CK(cudaMalloc(&acc_rows, 1 << 20));
    {
        std::vector<std::uint16_t> hx(32 << 10);
        for (std::size_t i = 0; i < hx.size(); ++i)
            hx[i] = static_cast<std::uint16_t>(0x3c00 + (i * 37) % 256); // ~1..2, varied
        CK(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice));
        // weights: small varied bf16 (0x3b.. to 0xbb..), never zero
        std::vector<std::uint16_t> hw(8 << 20);
        for (std::size_t i = 0; i < hw.size(); ++i)
            hw[i] = static_cast<std::uint16_t>(((i * 2654435761u) >> 7 & 0x8000) | 0x3b00 |
                                               (i * 131) % 256);
        for (std::int64_t off = 0; off < pool_bytes; off += hw.size() * 2)
            CK(cudaMemcpy(reinterpret_cast<char*>(pool) + off, hw.data(),
                          std::min<std::int64_t>(hw.size() * 2, pool_bytes - off),
                          cudaMemcpyHostToDevice));
    }
    std::uint64_t* stamps = nullptr;
    CK(cudaMalloc(&stamps, std::int64_t{grid} * 8 * 3 * 8));
    // PROBE_DATA=random: hashed weights instead of the repeated 16 MB pattern; PROBE_SETS=N: N
    // weight copies in the rotation (fourfold takes ceil(3 x L2 / bytes), at least 1);
    // PROBE_ONLY=1: the shapes fourfold measured apart from the probe, and no stamps
    const char* data_env = std::getenv("PROBE_DATA");
    const bool random_data = data_env && std::string(data_env) == "random";
    const int sets_env = std::getenv("PROBE_SETS") ? std::atoi(std::getenv("PROBE_SETS")) : 0;
    const bool only = std::getenv("PROBE_ONLY") != nullptr;
    // PROBE_OFFSET_KB=X: the weight copies X KB further apart than their size (their bases off
    // the size's power-of-two alignment, as separate allocations of a caching allocator are)
    const std::int64_t offset_bytes =
        std::getenv("PROBE_OFFSET_KB") ? std::atoll(std::getenv("PROBE_OFFSET_KB")) * 1024 : 0;
    if (random_data) {
        fill_random<<<1024, 256>>>(reinterpret_cast<std::uint16_t*>(pool), pool_bytes / 2, 12345u);
        CK(cudaDeviceSynchronize());
    }
    if (std::getenv("PROBE_FP8")) {
        no_e4m3_nan<<<1024, 256>>>(reinterpret_cast<std::uint8_t*>(pool), pool_bytes);
        CK(cudaDeviceSynchronize());
    }
    std::printf("data %s, sets %s, %lld KB between copies\n", random_data ? "random" : "pattern",
                sets_env ? std::to_string(sets_env).c_str() : "512 MB",
                static_cast<long long>(offset_bytes / 1024));

    const shape shapes[] = {{4096, 28672}, {6144, 5120},   {2048, 4096},   {4096, 4096},
                            {6144, 4096},  {8192, 4096},   {14336, 4096},  {28672, 4096},
                            {28672, 2048}, {128256, 4096}, {128256, 2048}, {4096, 14336},
                            {8192, 8192}};
    enum variant {
        v_empty,
        v_bal,
        v_bal_nopdl,
        v_stream,
        v_l2_256,
        v_dynamic,
        v_dyn2,
        v_w2,
        v_w4,
        v_w8,
        v_w16,
        v_div,
        v_div2,
        v_cublas,
        v_fp8,
        v_fp8_x1,
        v_fp8_nox,
        v_fp8_acc4,
        v_fp8_r2,
        v_fp8_r4,
        v_fp8_h8,
        v_fp8_xs,
        v_fp8_h8xs,
        v_fp8_prmt,
        v_bf16_prmt,
        v_cs_u4d2,
        v_cs_u2d4,
        v_cs_u2d2,
        v_cs_u4d1,
        v_bcs_u4d2,
        v_bcs_u2d4,
        v_bcs_u2d8,
        v_count
    };
    // PROBE_FP8=1: the bytes as FP8 weights (session 39), beside bf16 and the bare stream
    const bool fp8 = std::getenv("PROBE_FP8") != nullptr;
    const bool run_variant[] = {false, true,  false, fp8,  false, false, false, false,
                                false, false, false, !fp8, false, !fp8,  fp8,   fp8,
                                fp8,   fp8,   fp8,   fp8,  fp8,   fp8,   fp8,   fp8,
                                true,  fp8,   fp8,   fp8,  fp8,   !fp8,  !fp8,  !fp8};
    // the largest divisor of n in [lo, hi], else hi: every block the same rows
    auto divisor_grid = [](std::int64_t n, int lo, int hi) {
        for (int b = hi; b >= lo; --b)
            if (n % b == 0)
                return b;
        return hi;
    };
    const char* names[] = {
        "empty",        "balanced",    "balanced_nopdl", "stream",      "l2_256",
        "dynamic",      "dynamic_p2",  "waves2",         "waves4",      "waves8",
        "waves16",      "divisor",     "divisor_x2",     "cublas",      "fp8",
        "fp8_x1",       "fp8_nox",     "fp8_acc4",       "fp8_r2",      "fp8_r4",
        "fp8_h8",       "fp8_xs",      "fp8_h8xs",       "fp8_prmt",    "bf16_prmt",
        "fp8_cs_u4d2",  "fp8_cs_u2d4", "fp8_cs_u2d2",    "fp8_cs_u4d1", "bf16_cs_u4d2",
        "bf16_cs_u2d4", "bf16_cs_u2d8"};
    static_assert(sizeof names / sizeof names[0] == v_count);
    static_assert(sizeof run_variant / sizeof run_variant[0] == v_count);
    std::printf("H200 probe: %d SMs, grid %d x 256 for the fourfold kernels\n", sms, grid);
    std::printf("%-14s %-8s %9s %9s %9s\n", "shape", "variant", "us/call", "GB/s", "calls");
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const auto& sh : shapes) {
        if (only && !((sh.n == 4096 && sh.k != 4096) || sh.n == 8192 || sh.n == 14336))
            continue;
        // FP8: 28672 x 4096 (117 MB, as bf16 28672 x 2048 below), 14336 x 4096's bytes, the LM
        // head's
        if (fp8 && !((sh.n == 28672 && sh.k == 2048) || (sh.n == 14336 && sh.k == 4096) ||
                     (sh.n == 128256 && sh.k == 2048)))
            continue;
        const std::int64_t wbytes = sh.n * sh.k * 2;
        int sets = static_cast<int>(
            std::max<std::int64_t>(1, std::min<std::int64_t>(pool_bytes / (wbytes + offset_bytes),
                                                             (512ll << 20) / wbytes + 1)));
        if (sets_env)
            sets = std::max(
                1, std::min<int>(sets, sets_env == 3
                                           ? static_cast<int>((3 * 60e6 + wbytes - 1) / wbytes)
                                           : sets_env));
        int calls = sets;
        while (calls < 24)
            calls += sets;
        calls = std::min(calls, k_max_calls);
        for (int v = 0; v < v_count; ++v) {
            if (!run_variant[v])
                continue;
            auto one = [&](int i) {
                const bf16* w = pool + (i % sets) * (sh.n * sh.k + offset_bytes / 2);
                // the balanced kernel (MODE, HINT) on `blocks` blocks
                const auto bal = [&](auto kernel, int blocks, bool pdl) {
                    launch(kernel, blocks, pdl, st, (const bf16*)x, w, y, sh.n, sh.k / 8, sh.k,
                           (std::uint64_t*)nullptr);
                };
                switch (v) {
                case v_empty:
                    launch(empty_kernel, grid, true, st, y);
                    break;
                case v_bal:
                case v_bal_nopdl:
                    bal(balanced<0, 0>, grid, v == v_bal);
                    break;
                case v_w2:
                case v_w4:
                case v_w8:
                case v_w16:
                    bal(balanced<0, 0>, grid << (v - v_w2 + 1), true);
                    break;
                case v_div:
                case v_div2: {
                    const int cap = grid * (v == v_div ? 1 : 2);
                    bal(balanced<0, 0>, divisor_grid(sh.n, cap * 3 / 4, cap), true);
                    break;
                }
                case v_stream:
                    bal(balanced<1, 0>, grid, true);
                    break;
                case v_l2_256:
                    bal(balanced<0, 1>, grid, true);
                    break;
                case v_fp8:
                    bal(balanced<2, 0>, grid, true);
                    break;
                case v_fp8_x1:
                    bal(balanced<3, 0>, grid, true);
                    break;
                case v_fp8_nox:
                    bal(balanced<4, 0>, grid, true);
                    break;
                case v_fp8_acc4:
                    bal(balanced<5, 0>, grid, true);
                    break;
                case v_fp8_r2:
                    bal(balanced<6, 0>, grid, true);
                    break;
                case v_fp8_r4:
                    bal(balanced<7, 0>, grid, true);
                    break;
                case v_fp8_h8:
                    bal(balanced<8, 0>, grid, true);
                    break;
                case v_fp8_xs:
                    bal(balanced<9, 0>, grid, true);
                    break;
                case v_fp8_h8xs:
                    bal(balanced<10, 0>, grid, true);
                    break;
                case v_fp8_prmt:
                    bal(balanced<11, 0>, grid, true);
                    break;
                case v_bf16_prmt:
                    bal(balanced<12, 0>, grid, true);
                    break;
                case v_cs_u4d2:
                case v_cs_u2d4:
                case v_cs_u2d2:
                case v_cs_u4d1: {
                    const int u = v == v_cs_u4d2 || v == v_cs_u4d1 ? 4 : 2;
                    const int minb = v == v_cs_u2d2 ? 3 : 2;
                    const int S = static_cast<int>((sh.k / 8 + 32 * u - 1) / (32 * u));
                    const auto k = v == v_cs_u4d2   ? cs_kernel<4, 2, 2>
                                   : v == v_cs_u2d4 ? cs_kernel<2, 4, 2>
                                   : v == v_cs_u4d1 ? cs_kernel<4, 1, 2>
                                                    : cs_kernel<2, 2, 3>;
                    launch(k, sms * minb, true, st, (const bf16*)x, w, y, sh.n, sh.k / 8, sh.k, S);
                    break;
                }
                case v_bcs_u4d2:
                case v_bcs_u2d4:
                case v_bcs_u2d8: {
                    const int u = v == v_bcs_u4d2 ? 4 : 2;
                    const int S = static_cast<int>((sh.k / 8 + 32 * u - 1) / (32 * u));
                    const auto k = v == v_bcs_u4d2   ? cs_kernel<4, 2, 2, true>
                                   : v == v_bcs_u2d4 ? cs_kernel<2, 4, 2, true>
                                                     : cs_kernel<2, 8, 2, true>;
                    launch(k, sms * 2, true, st, (const bf16*)x, w, y, sh.n, sh.k / 8, sh.k, S);
                    break;
                }
                case v_dynamic:
                case v_dyn2: {
                    const int steps = static_cast<int>((sh.k / 8 + 127) / 128);
                    const int maxp = v == v_dynamic ? 4 : 2;
                    const int ppr = (steps + maxp - 1) / maxp, pstep = (steps + ppr - 1) / ppr;
                    launch(dynamic_pieces, grid, true, st, (const bf16*)x, w, y, acc_rows, sh.n,
                           sh.k / 8, sh.k, counters + 4096 * i, ppr, pstep);
                    break;
                }
                case v_cublas: {
                    const float alpha = 1.f, beta = 0.f;
                    cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(sh.n), 1,
                                 static_cast<int>(sh.k), &alpha, w, CUDA_R_16BF,
                                 static_cast<int>(sh.k), x, CUDA_R_16BF, static_cast<int>(sh.k),
                                 &beta, y, CUDA_R_16BF, static_cast<int>(sh.n), CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT);
                    break;
                }
                }
            };
            if (v >= v_cs_u4d2) {
                const int u = v == v_cs_u4d2 || v == v_cs_u4d1 || v == v_bcs_u4d2 ? 4 : 2;
                const int minb = v == v_cs_u2d2 ? 3 : 2;
                const std::int64_t S = (sh.k / 8 + 32 * u - 1) / (32 * u);
                const std::int64_t groups = std::int64_t{sms} * minb * (8 / S);
                if (8 % S != 0 || (sh.n + groups - 1) / groups > k_cs_max_rows) {
                    std::printf("%-14s %-15s skipped (%lld slices)\n", "", names[v], (long long)S);
                    continue;
                }
            }
            for (int i = 0; i < 3; ++i)
                one(i);
            CK(cudaStreamSynchronize(st));
            CK(cudaGetLastError());
            // fp8 (bf16: balanced) and the column-stationary kernels on copy 0: y against fp8's
            // (balanced's)
            if (v == (fp8 ? v_fp8 : v_bal) || v >= v_cs_u4d2) {
                one(0);
                CK(cudaStreamSynchronize(st));
                static std::vector<std::uint16_t> ref;
                std::vector<std::uint16_t> got(sh.n);
                CK(cudaMemcpy(got.data(), y, sh.n * 2, cudaMemcpyDeviceToHost));
                if (v == v_fp8 || v == v_bal)
                    ref = got;
                else {
                    const auto f = [](std::uint16_t b) {
                        const unsigned u32 = unsigned{b} << 16;
                        float r;
                        std::memcpy(&r, &u32, 4);
                        return r;
                    };
                    double worst = 0, norm = 0, diff = 0;
                    for (std::int64_t r = 0; r < sh.n; ++r) {
                        const double a = f(ref[r]), b = f(got[r]);
                        diff += (a - b) * (a - b);
                        norm += a * a;
                        worst = std::max(worst, std::abs(a - b) / (std::abs(a) + 1e-3));
                    }
                    std::printf("  %s against %s: rel L2 %.3g, worst rel %.3g\n", names[v],
                                fp8 ? "fp8" : "balanced", std::sqrt(diff / std::max(norm, 1e-30)),
                                worst);
                }
            }
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaMemsetAsync(counters, 0, 4096 * k_max_calls * sizeof(unsigned), st));
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
            CK(cudaMemsetAsync(counters, 0, 4096 * k_max_calls * sizeof(unsigned), st));
            for (int i = 0; i < calls; ++i)
                one(i);
            CK(cudaStreamEndCapture(st, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            CK(cudaGraphLaunch(ge, st));
            CK(cudaStreamSynchronize(st));
            std::vector<float> t;
            for (int r = 0; r < 15; ++r) {
                CK(cudaEventRecord(e0, st));
                CK(cudaGraphLaunch(ge, st));
                CK(cudaEventRecord(e1, st));
                CK(cudaEventSynchronize(e1));
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                t.push_back(ms * 1e3f / calls);
            }
            std::sort(t.begin(), t.end());
            const float med = t[t.size() / 2];
            char sname[32];
            std::snprintf(sname, sizeof sname, "%lldx%lld", (long long)sh.n, (long long)sh.k);
            std::printf("%-14s %-15s %8.2f %9.0f %6d (min %.2f max %.2f)\n", sname, names[v], med,
                        v == v_empty ? 0.0 : wbytes / (med * 1e3), calls, t.front(), t.back());
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
        }
        // one plain launch of the balanced kernel after a cold pass over another copy: each
        // warp's start and end, relative to the earliest start
        if (!only && !fp8) {
            const int sgrid = divisor_grid(sh.n, grid * 3 / 4, grid);
            launch(balanced<0, 0>, sgrid, false, st, (const bf16*)x,
                   pool + (sets > 1 ? sh.n * sh.k : 0), y, sh.n, sh.k / 8, sh.k,
                   (std::uint64_t*)nullptr);
            CK(cudaEventRecord(e0, st));
            launch(balanced<0, 0>, sgrid, false, st, (const bf16*)x, (const bf16*)pool, y, sh.n,
                   sh.k / 8, sh.k, stamps);
            CK(cudaEventRecord(e1, st));
            CK(cudaStreamSynchronize(st));
            float ms = 0;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            std::vector<std::uint64_t> hs(std::size_t(grid) * 24);
            CK(cudaMemcpy(hs.data(), stamps, hs.size() * 8, cudaMemcpyDeviceToHost));
            std::uint64_t t0 = ~0ull;
            std::vector<double> starts, ends;
            for (int i = 0; i < sgrid * 8; ++i)
                t0 = std::min(t0, hs[3 * i]);
            std::vector<double> sm_sum(sms, 0), sm_max(sms, 0), sm_min(sms, 1e9);
            std::vector<int> sm_n(sms, 0);
            for (int i = 0; i < sgrid * 8; ++i) {
                starts.push_back((hs[3 * i] - t0) * 1e-3);
                const double e = (hs[3 * i + 1] - t0) * 1e-3;
                ends.push_back(e);
                const auto sm = static_cast<int>(hs[3 * i + 2]) % sms;
                sm_sum[sm] += e;
                sm_n[sm] += 1;
                sm_max[sm] = std::max(sm_max[sm], e);
                sm_min[sm] = std::min(sm_min[sm], e);
            }
            std::vector<std::pair<double, int>> sm_mean;
            double within = 0;
            for (int i = 0; i < sms; ++i)
                if (sm_n[i]) {
                    sm_mean.push_back({sm_sum[i] / sm_n[i], i});
                    within += sm_max[i] - sm_min[i];
                }
            std::sort(sm_mean.begin(), sm_mean.end());
            std::printf(
                "  per SM mean end: min %.2f p50 %.2f max %.2f; mean within-SM spread %.2f; "
                "slowest SMs:",
                sm_mean.front().first, sm_mean[sm_mean.size() / 2].first, sm_mean.back().first,
                within / sm_mean.size());
            for (std::size_t i = sm_mean.size() - 10; i < sm_mean.size(); ++i)
                std::printf(" %d", sm_mean[i].second);
            std::printf("\n");
            std::sort(starts.begin(), starts.end());
            std::sort(ends.begin(), ends.end());
            auto q = [](const std::vector<double>& a, double p) {
                return a[std::min(a.size() - 1, static_cast<std::size_t>(p * a.size()))];
            };
            std::printf("  stamps (divisor grid) %lldx%lld (one launch, event %.2f us): start p50 "
                        "%.2f max %.2f | "
                        "end min %.2f p10 %.2f p50 %.2f p90 %.2f p99 %.2f max %.2f us\n",
                        (long long)sh.n, (long long)sh.k, ms * 1e3, q(starts, 0.5), starts.back(),
                        ends.front(), q(ends, 0.1), q(ends, 0.5), q(ends, 0.9), q(ends, 0.99),
                        ends.back());
        }
    }
    return 0;
}
