// FP8 weight-only GEMV kernels (see gemv_fp8.hpp).
//
// Lane l of a warp reads 16-byte vectors l, l + 32, ... of its slice of each of its R rows (16
// e4m3 values each), so one load instruction of a warp covers 512 contiguous bytes of a row. A
// vector is converted two values at a time (cvt.rn.f16x2.e4m3x2 from sm_89: exact, e4m3 being a
// subset of fp16) and widened to fp32; the 16 matching bf16 values of each token's x (two
// 16-byte loads through L1, shared by the R rows) are widened by byte permutes (fp8_widen.cuh).
// Sums are fp32; the row's scale, then the bias, are applied once to the reduced sum before the
// one rounding to bf16.
//
// From sm_90 every kernel is a programmatic dependent launch (elements.cuh): it lets the next
// kernel launch at once, prefetches its first weight steps into L2 while the kernel before it
// may still run (the weights are constants of the model; a prefetch is only a hint through the
// one coherent L2), and waits for that kernel before it loads x, the scale or the bias and
// before it writes y. The scale and bias are constants too, but nothing of the op's own
// contract says so (the op benchmark's inputs are buffers like x): after the wait, where they
// cost one load each a row, under the weights' latency.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/fp8_widen.cuh"
#include "fourfold/kernels/gemv_claim.cuh"
#include "fourfold/kernels/gemv_cs.cuh"
#include "fourfold/kernels/gemv_fp8.hpp"
#include "fourfold/kernels/reduce.cuh"

#include <cuda_fp8.h>

namespace fourfold::kernels {
namespace {

using namespace device;
using bf16 = __nv_bfloat16;

// gemv_claim's weight format for e4m3 weights (gemv_claim.cuh): a 16-byte vector is 16 weights,
// multiplied by two 16-byte vectors of bf16 x in two halves of 8, in fma_vector's order; the
// row's scale multiplies its sum once, before the bias.
struct e4m3_weights {
    using X = bf16;
    using W = std::uint8_t;
    static constexpr int x_vectors = 2;
    static constexpr bool scaled = true;
    template <bool SHARED>
    __device__ static __forceinline__ float dot(float acc, const uint4& wv,
                                                const uint4* __restrict__ xv, int v) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            float wf[8], xf[8];
            half == 0 ? unpack_e4m3(wv.x, wv.y, wf) : unpack_e4m3(wv.z, wv.w, wf);
            if constexpr (SHARED) {
                const uint4 r = xv[2 * v + half]; // one 16-byte shared load (gemv_claim.cuh)
                unpack_bf16(r, xf);
            } else
                unpack_bf16(__ldg(xv + 2 * v + half), xf);
#pragma unroll
            for (int j = 0; j < 8; ++j)
                acc = fmaf(wf[j], xf[j], acc);
        }
        return acc;
    }
    // gemv_cs (gemv_cs.cuh): the 16 x values a weight vector multiplies, held as floats
    static constexpr int x_floats = 16;
    __device__ static __forceinline__ void unpack_x(const uint4& r, float* f) {
        unpack_bf16(r, f);
    }
    __device__ static __forceinline__ float dot_regs(float acc, const uint4& c,
                                                     const float (&xf)[16]) {
        float wf[8];
        unpack_e4m3(c.x, c.y, wf);
#pragma unroll
        for (int e = 0; e < 8; ++e)
            acc = fmaf(wf[e], xf[e], acc);
        unpack_e4m3(c.z, c.w, wf);
#pragma unroll
        for (int e = 0; e < 8; ++e)
            acc = fmaf(wf[e], xf[8 + e], acc);
        return acc;
    }
};

// The scale and bias of the row lane `lane` writes (lane r * tok + t writes row row0 + r),
// loaded before the row's weights so that their latency hides under the weights' (the bf16
// GEMV measured +4 % on a 3 us call with the bias read after the reduction).
struct row_epilogue {
    float scale = 1.f, bias = 0.f;
};
__device__ __forceinline__ row_epilogue lane_epilogue(const float* __restrict__ scale,
                                                      std::int64_t inc_scale, bool per_row,
                                                      const bf16* __restrict__ bias,
                                                      std::int64_t row0, int lane, int tok,
                                                      int rows, std::int64_t n) {
    const int r = lane / tok;
    const std::int64_t row = row0 + r;
    row_epilogue e;
    if (r < rows && row < n) {
        e.scale = per_row ? scale[row * inc_scale] : scale[0];
        if (bias)
            e.bias = __bfloat162float(bias[row]);
    }
    return e;
}

__device__ __forceinline__ bf16 finish_value(float sum, const row_epilogue& e) {
    return __float2bfloat16_rn(fmaf(sum, e.scale, e.bias));
}

// acc[r][t] += w (16 values of row r) . x (16 values of token t) for the vector at `xv + 2 v`,
// in two halves of 8 (with all 16 weights of R = 2 rows and 8 tokens live at once, the kernel
// spilled).
template <int TOK, int R>
__device__ __forceinline__ void fma_vector(float (&acc)[R][TOK], const uint4 (&wv)[R],
                                           const uint4* const (&xv)[TOK], std::int64_t v) {
#pragma unroll
    for (int half = 0; half < 2; ++half) {
        float wf[R][8];
#pragma unroll
        for (int r = 0; r < R; ++r)
            half == 0 ? unpack_e4m3(wv[r].x, wv[r].y, wf[r]) : unpack_e4m3(wv[r].z, wv[r].w, wf[r]);
#pragma unroll
        for (int t = 0; t < TOK; ++t) {
            float xf[8];
            unpack_bf16(__ldg(xv[t] + 2 * v + half), xf);
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int j = 0; j < 8; ++j)
                    acc[r][t] = fmaf(wf[r][j], xf[j], acc[r][t]);
        }
    }
}

// Unsplit K: warp w of the grid takes row groups w, w + W, ... (W warps in the grid, R rows a
// group) and streams them back to back: the next step's loads (of this group, or the next
// group's first) are issued before the current step is multiplied, so a warp's pipe never
// drains between rows (the bf16 GEMV's gemv_stream, measured there).
template <int TOK, int R>
__global__ void __launch_bounds__(256, gemv_fp8_blocks_per_sm(TOK))
    gemv_fp8_stream(const bf16* __restrict__ x, const std::uint8_t* __restrict__ w,
                    const float* __restrict__ scale, std::int64_t inc_scale, bool per_row,
                    const bf16* __restrict__ bias, bf16* __restrict__ y, std::int64_t n,
                    std::int64_t nkv, std::int64_t ld_x, std::int64_t ld_w, std::int64_t ld_y) {
    constexpr int U = 4 / R; // vectors of each row per lane per step
    const int lane = threadIdx.x % 32;
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
    const std::int64_t groups = (n + R - 1) / R;
    const std::int64_t steps = (nkv + 32 * U - 1) / (32 * U);
    allow_dependents();
    std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (g >= groups)
        return;
    // the group's first step into L2 while the kernel before may still run (a lane in 8 covers
    // a 128-byte line), then wait
    if (lane % 8 == 0)
#pragma unroll
        for (int r = 0; r < R; ++r)
            if (g * R + r < n)
#pragma unroll
                for (int u = 0; u < U; ++u)
                    if (u * 32 + lane < nkv)
                        prefetch_l2(reinterpret_cast<const uint4*>(w + (g * R + r) * ld_w) +
                                    u * 32 + lane);
    dependency_wait();
    const uint4* xv[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        xv[t] = reinterpret_cast<const uint4*>(x + t * ld_x);

    auto fetch = [&](uint4(&dst)[U][R], std::int64_t grp, std::int64_t s) {
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const std::int64_t row = grp * R + r;
            const uint4* wr = reinterpret_cast<const uint4*>(w + (row < n ? row : 0) * ld_w);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const std::int64_t v = s * 32 * U + u * 32 + lane;
                dst[u][r] = v < nkv && row < n ? load_streaming(wr + v) : make_uint4(0, 0, 0, 0);
            }
        }
    };
    float acc[R][TOK];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[r][t] = 0.f;
    uint4 cur[U][R], nxt[U][R];
    std::int64_t s = 0;
    row_epilogue ep_cur = lane_epilogue(scale, inc_scale, per_row, bias, g * R, lane, TOK, R, n);
    row_epilogue ep_next;
    fetch(cur, g, s);
    while (true) {
        std::int64_t g2 = g, s2 = s + 1;
        if (s2 == steps) {
            s2 = 0;
            g2 = g + warps;
        }
        const bool more = g2 < groups;
        if (more) {
            fetch(nxt, g2, s2);
            if (s2 == 0)
                ep_next = lane_epilogue(scale, inc_scale, per_row, bias, g2 * R, lane, TOK, R, n);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::int64_t v = s * 32 * U + u * 32 + lane;
            if (v < nkv) // (past the row's end the loads were zero alike)
                fma_vector<TOK, R>(acc, cur[u], xv, v);
        }
        if (s == steps - 1) {
            // the group's last step: reduce over the lanes, lane r * TOK + t writes (t, row r)
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int t = 0; t < TOK; ++t) {
                    const float sum = warp_sum(acc[r][t]);
                    const std::int64_t row = g * R + r;
                    if (lane == r * TOK + t && row < n)
                        y[t * ld_y + row] = finish_value(sum, ep_cur);
                    acc[r][t] = 0.f;
                }
        }
        if (!more)
            break;
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int r = 0; r < R; ++r)
                cur[u][r] = nxt[u][r];
        if (s2 == 0)
            ep_cur = ep_next;
        g = g2;
        s = s2;
    }
}

// One token, rows split evenly over the warps of a block (the bf16 GEMV's gemv_balanced, whose
// comment has the measurements). Block b takes the contiguous rows [b N / B, (b + 1) N / B);
// their steps (U = 4 vectors a lane, 2 KB a warp) laid end to end are cut into 8 equal runs, one
// a warp, streamed across row boundaries with the next step's loads in flight. A row wholly in
// one run is written by its warp at once; a row cut between runs leaves partial sums in shared
// memory (the first runs' as `tail`, the run holding its last step as `head`), and after one
// block barrier that last warp adds them in warp order (deterministic), scales, adds the bias
// and writes the row. A row of one step is never cut, and from 2 steps a row the plan's 4 rows
// a block give every run a step at least, so a cut row's runs are adjacent warps.
__global__ void __launch_bounds__(256, gemv_fp8_blocks_per_sm(1))
    gemv_fp8_balanced(const bf16* __restrict__ x, const std::uint8_t* __restrict__ w,
                      const float* __restrict__ scale, std::int64_t inc_scale, bool per_row,
                      const bf16* __restrict__ bias, bf16* __restrict__ y, std::int64_t n,
                      std::int64_t nkv, std::int64_t ld_w) {
    constexpr int U = 4;
    __shared__ float head[8], tail[8];
    __shared__ int head_row[8], tail_row[8]; // rows of this block, from r0
    allow_dependents();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::int64_t blocks = gridDim.x;
    const std::int64_t r0 = blockIdx.x * n / blocks;
    const int rows = static_cast<int>((blockIdx.x + 1) * n / blocks - r0);
    const int kv = static_cast<int>(nkv);           // the plan keeps n and k below 2^31
    const int steps = (kv + 32 * U - 1) / (32 * U); // a row's steps
    const int total = rows * steps;                 // below 2^31 (the plan checks)
    const int lo = static_cast<int>(std::int64_t{warp} * total / 8);
    const int hi = static_cast<int>(std::int64_t{warp + 1} * total / 8);
    if (lane == 0) {
        head_row[warp] = -1;
        tail_row[warp] = -1;
    }
    const uint4* w0 = reinterpret_cast<const uint4*>(w + r0 * ld_w);
    const std::int64_t ldv = ld_w / 16; // row stride in vectors
    auto fetch = [&](uint4(&dst)[U][1], int row, int s) {
        const uint4* wr = w0 + row * ldv;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            dst[u][0] = v < kv ? load_streaming(wr + v) : make_uint4(0, 0, 0, 0);
        }
    };
    // the scale and bias of a row, in lane 0 (the lane that writes it)
    auto epilogue_of = [&](int row) {
        row_epilogue e;
        if (lane == 0) {
            e.scale = per_row ? scale[(r0 + row) * inc_scale] : scale[0];
            if (bias)
                e.bias = __bfloat162float(bias[r0 + row]);
        }
        return e;
    };
    // the run's first two steps into L2 while the kernel before may still run, then wait
    for (int i = lo; i < lo + 2 && i < hi; ++i)
        if (lane % 8 == 0)
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int v = (i % steps) * 32 * U + u * 32 + lane;
                if (v < kv)
                    prefetch_l2(w0 + (i / steps) * ldv + v);
            }
    dependency_wait();
    const uint4* const xv[1] = {reinterpret_cast<const uint4*>(x)};
    row_epilogue ep_head; // of the cut row whose last step this run holds, loaded with its first
    if (lo < hi) {
        int row = lo / steps, s = lo % steps;
        const int first_row = row;
        const bool first_cut = s != 0; // the run starts inside its first row
        row_epilogue ep_cur = epilogue_of(row), ep_next;
        float acc[1][1] = {{0.f}};
        uint4 cur[U][1], nxt[U][1];
        fetch(cur, row, s);
        for (int i = lo; i < hi; ++i) {
            int row2 = row, s2 = s + 1;
            if (s2 == steps) {
                s2 = 0;
                ++row2;
            }
            const bool more = i + 1 < hi;
            if (more) {
                fetch(nxt, row2, s2);
                if (s2 == 0)
                    ep_next = epilogue_of(row2);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int v = s * 32 * U + u * 32 + lane;
                if (v < kv) // (past the row's end the loads were zero alike)
                    fma_vector<1, 1>(acc, cur[u], xv, v);
            }
            const bool row_ends = s == steps - 1;
            if (row_ends || !more) {
                const float sum = warp_sum(acc[0][0]);
                if (lane == 0) {
                    if (row_ends && !(row == first_row && first_cut)) { // whole in this run
                        y[r0 + row] = finish_value(sum, ep_cur);
                    } else if (row_ends) { // cut, and this run holds its last step
                        head[warp] = sum;
                        head_row[warp] = row;
                        ep_head = ep_cur;
                    } else { // cut, and the row goes on in the next run
                        tail[warp] = sum;
                        tail_row[warp] = row;
                    }
                }
                acc[0][0] = 0.f;
            }
            if (!more)
                break;
#pragma unroll
            for (int u = 0; u < U; ++u)
                cur[u][0] = nxt[u][0];
            if (s2 == 0)
                ep_cur = ep_next;
            row = row2;
            s = s2;
        }
    }
    __syncthreads();
    const int hr = head_row[warp];
    if (hr >= 0 && lane == 0) {
        float v = head[warp];
        for (int j = warp - 1; j >= 0 && tail_row[j] == hr; --j)
            v += tail[j];
        y[r0 + hr] = finish_value(v, ep_head);
    }
}

// Reduces acc over the lanes and the KS warps of a row group (in shared memory), then writes y.
template <int TOK, int R>
__device__ __forceinline__ void finish_split(float (&acc)[R][TOK], float (*part)[R * TOK], int warp,
                                             int lane, int ks, int ks_index, std::int64_t row0,
                                             std::int64_t n, int tokens, const row_epilogue& ep,
                                             bf16* __restrict__ y, std::int64_t ld_y) {
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[r][t] = warp_sum(acc[r][t]);
    if (ks > 1) {
        if (lane == 0) {
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int t = 0; t < TOK; ++t)
                    part[warp][r * TOK + t] = acc[r][t];
        }
        __syncthreads();
        if (ks_index == 0) {
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int t = 0; t < TOK; ++t) {
                    float s = 0.f;
                    for (int i = 0; i < ks; ++i)
                        s += part[warp + i][r * TOK + t];
                    acc[r][t] = s;
                }
        }
    }
    if (ks_index == 0) {
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                const std::int64_t row = row0 + r;
                if (lane == r * TOK + t && row < n && t < tokens)
                    y[t * ld_y + row] = finish_value(acc[r][t], ep);
            }
    }
    if (ks > 1)
        __syncthreads(); // part is reused by the next row block
}

// Split K: a block is (8 / KS) row groups of R rows, each group's K split over KS warps; one
// row block a block (the grid is as many blocks as row blocks: split K is for small N).
template <int TOK, int R>
__global__ void __launch_bounds__(256, gemv_fp8_blocks_per_sm(TOK))
    gemv_fp8_split(const bf16* __restrict__ x, const std::uint8_t* __restrict__ w,
                   const float* __restrict__ scale, std::int64_t inc_scale, bool per_row,
                   const bf16* __restrict__ bias, bf16* __restrict__ y, std::int64_t n,
                   std::int64_t nkv, std::int64_t ld_x, std::int64_t ld_w, std::int64_t ld_y,
                   int ks, std::int64_t kchunk) {
    constexpr int U = 4 / R;
    __shared__ float part[8][R * TOK];
    allow_dependents();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups = 8 / ks, group = warp / ks, ks_index = warp % ks;
    const std::int64_t kbeg = ks_index * kchunk;
    const std::int64_t kend = kbeg + kchunk < nkv ? kbeg + kchunk : nkv;
    const std::int64_t row0 =
        (static_cast<std::int64_t>(blockIdx.x) * groups + group) * static_cast<std::int64_t>(R);
    const uint4* wr[R];
    bool row_ok[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        row_ok[r] = row0 + r < n;
        wr[r] = reinterpret_cast<const uint4*>(w + (row_ok[r] ? row0 + r : 0) * ld_w);
    }
    // the first step into L2 while the kernel before may still run, then wait: vectors 8
    // (a 128-byte line) apart and the step's last, so that every line is touched however the
    // slice is aligned (the fetch's own addresses, kept live across the wait, spilled)
    const std::int64_t pv = kbeg + (lane * 8 < 32 * U ? lane * 8 : 32 * U - 1);
#pragma unroll
    for (int r = 0; r < R; ++r)
        if (pv < kend && row_ok[r])
            prefetch_l2(wr[r] + pv);
    dependency_wait();
    const uint4* xv[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        xv[t] = reinterpret_cast<const uint4*>(x + t * ld_x);
    const row_epilogue ep = lane_epilogue(scale, inc_scale, per_row, bias, row0, lane, TOK, R, n);
    float acc[R][TOK];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[r][t] = 0.f;
    uint4 cur[U][R], nxt[U][R];
    auto fetch = [&](uint4(&dst)[U][R], std::int64_t v) {
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int r = 0; r < R; ++r) {
                const std::int64_t vv = v + u * 32;
                dst[u][r] =
                    vv < kend && row_ok[r] ? load_streaming(wr[r] + vv) : make_uint4(0, 0, 0, 0);
            }
    };
    fetch(cur, kbeg + lane);
    for (std::int64_t v = kbeg + lane; v < kend; v += 32 * U) {
        fetch(nxt, v + 32 * U);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::int64_t vv = v + u * 32;
            if (vv < kend)
                fma_vector<TOK, R>(acc, cur[u], xv, vv);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
#pragma unroll
            for (int r = 0; r < R; ++r)
                cur[u][r] = nxt[u][r];
    }
    finish_split<TOK, R>(acc, part, warp, lane, ks, ks_index, row0, n, TOK, ep, y, ld_y);
}

// One token, column-stationary (session 40; gemv_fp8_plan::column_stationary): gemv_cs of
// gemv_cs.cuh over e4m3_weights, a warp's slice 1 KB of a row (1,024 weights, its x as 32 floats a
// lane). The FP8 GEMV's missing bandwidth was on x's side (its loads through L1 and their
// widening, 2 x 16 bytes of x a 16-byte weight vector: session 39's probe); bench/gpu/
// gemv_probe.cu's copy of the kernel moved the bare stream's rate (28672 x 4096 28.6 µs against
// the balanced kernel's 34.4; H200, session 40). The SwiGLU made by each warp for its slice (the
// default for a fused SwiGLU, session 41): 4096 x 14336 + SwiGLU + bias 17.7 -> 16.8 µs.
// (Session 40's first rows loaded before the prologue gained alone on runs of 12 rows, 6144 x 4096
// + RMSNorm 11.3 -> 10.6 µs, and lost the decode each time: 387.6 -> 385.8 tokens/s, 391.0 ->
// 389.1 with the per-warp SwiGLU, s41_c; removed.)

// Any alignment and any strides: one e4m3 value a lane a step, tokens up to 8 at run time,
// a grid-stride loop over row blocks.
__global__ void __launch_bounds__(256, 2)
    gemv_fp8_scalar(const bf16* __restrict__ x, const std::uint8_t* __restrict__ w,
                    const float* __restrict__ scale, std::int64_t inc_scale, bool per_row,
                    const bf16* __restrict__ bias, bf16* __restrict__ y, int tokens, std::int64_t n,
                    std::int64_t k, std::int64_t ld_x, std::int64_t ld_w, std::int64_t ld_y,
                    std::int64_t inc_x, std::int64_t inc_w, int ks, std::int64_t kchunk,
                    std::int64_t row_blocks) {
    constexpr int TOK = k_gemv_fp8_max_tokens;
    __shared__ float part[8][TOK];
    allow_dependents();
    dependency_wait(); // x is read from the start
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups = 8 / ks, group = warp / ks, ks_index = warp % ks;
    const std::int64_t kbeg = ks_index * kchunk;
    const std::int64_t kend = kbeg + kchunk < k ? kbeg + kchunk : k;
    for (std::int64_t rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
        const std::int64_t row0 = rb * groups + group;
        const row_epilogue ep =
            lane_epilogue(scale, inc_scale, per_row, bias, row0, lane, TOK, 1, n);
        float acc[1][TOK];
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[0][t] = 0.f;
        if (row0 < n) {
            const std::uint8_t* wr = w + row0 * ld_w;
            for (std::int64_t i = kbeg + lane; i < kend; i += 32) {
                const __half_raw h = __nv_cvt_fp8_to_halfraw(wr[i * inc_w], __NV_E4M3);
                const float wf = __half2float(__half(h));
#pragma unroll
                for (int t = 0; t < TOK; ++t)
                    if (t < tokens)
                        acc[0][t] = fmaf(wf, __bfloat162float(x[t * ld_x + i * inc_x]), acc[0][t]);
            }
        }
        finish_split<TOK, 1>(acc, part, warp, lane, ks, ks_index, row0, n, tokens, ep, y, ld_y);
    }
}

struct typed_args {
    const bf16* x;
    const std::uint8_t* w;
    const bf16* bias;
    bf16* y;
    bool per_row;
};

typed_args typed(const gemv_fp8_args& a) {
    return {static_cast<const bf16*>(a.x), static_cast<const std::uint8_t*>(a.w),
            static_cast<const bf16*>(a.bias), static_cast<bf16*>(a.y),
            a.scaling == fp8_scaling::per_row};
}

template <int TOK, int R>
launch_status launch_vec(const gemv_fp8_plan& p, const gemv_fp8_args& a, stream_t stream) {
    const auto t = typed(a);
    const std::int64_t nkv = a.k / 16;
    const dim3 grid(static_cast<unsigned>(p.blocks)), block(p.threads);
    if (p.k_split == 1)
        return status_of(launch_serialised_after(
            gemv_fp8_stream<TOK, R>, grid, block, stream, p.dependent_launch, t.x, t.w, a.scale,
            a.inc_scale, t.per_row, t.bias, t.y, a.n, nkv, a.ld_x, a.ld_w, a.ld_y));
    const std::int64_t kchunk = (nkv + p.k_split - 1) / p.k_split;
    return status_of(launch_serialised_after(
        gemv_fp8_split<TOK, R>, grid, block, stream, p.dependent_launch, t.x, t.w, a.scale,
        a.inc_scale, t.per_row, t.bias, t.y, a.n, nkv, a.ld_x, a.ld_w, a.ld_y, p.k_split, kchunk));
}

// One token: R by the row's length (plan_gemv_fp8); from two tokens on, R = 2.
template <int TOK>
launch_status launch_tokens(const gemv_fp8_plan& p, const gemv_fp8_args& a, stream_t stream) {
    if constexpr (TOK == 1) {
        if (p.column_stationary) {
            using namespace gemv_common;
            const auto t = typed(a);
            auto run = [&](auto kernel) {
                return status_of(launch_serialised_after_smem(
                    kernel, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads), p.shared_bytes,
                    stream, p.dependent_launch, t.x, t.w, a.scale, a.inc_scale, t.per_row, t.bias,
                    t.y, a.n, a.k / 16, a.ld_w, p.slices, p.slice_rows,
                    static_cast<const bf16*>(a.norm_weight), static_cast<float>(a.norm_eps),
                    p.epilogue_prefetch, p.cs_fetch_first, p.cs_l2_rows));
            };
            using F = e4m3_weights;
            constexpr int H = k_cs_half_warps; // two blocks an SM (FOURFOLD_GEMV_CS_HALF=1)
            const bool half = p.threads == H * 32;
            if (p.fused_swiglu) {
                if (p.swiglu_slices)
                    return half ? run(gemv_cs<F, k_cs_swiglu_slices, H>)
                                : run(gemv_cs<F, k_cs_swiglu_slices>);
                return half ? run(gemv_cs<F, k_pro_swiglu, H>) : run(gemv_cs<F, k_pro_swiglu>);
            }
            if (p.fused_norm)
                return half ? run(gemv_cs<F, k_pro_norm, H>) : run(gemv_cs<F, k_pro_norm>);
            return half ? run(gemv_cs<F, k_pro_none, H>) : run(gemv_cs<F, k_pro_none>);
        }
        if (p.claimed) {
            using namespace gemv_common;
            const auto t = typed(a);
            auto run = [&](auto kernel) {
                return status_of(launch_serialised_after_smem(
                    kernel, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads), p.shared_bytes,
                    stream, p.dependent_launch, t.x, t.w, t.bias, t.y, a.n, a.k / 16, a.ld_w,
                    static_cast<const bf16*>(a.norm_weight), static_cast<float>(a.norm_eps),
                    a.scale, a.inc_scale, t.per_row, p.epilogue_prefetch));
            };
            return p.fused_norm     ? run(gemv_claim<e4m3_weights, k_pro_norm>)
                   : p.fused_swiglu ? run(gemv_claim<e4m3_weights, k_pro_swiglu>)
                                    : run(gemv_claim<e4m3_weights, k_pro_none>);
        }
        if (p.balanced) {
            const auto t = typed(a);
            return status_of(launch_serialised_after(
                gemv_fp8_balanced, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads), stream,
                p.dependent_launch, t.x, t.w, a.scale, a.inc_scale, t.per_row, t.bias, t.y, a.n,
                a.k / 16, a.ld_w));
        }
        switch (p.rows_per_warp) {
        case 4:
            return launch_vec<1, 4>(p, a, stream);
        case 2:
            return launch_vec<1, 2>(p, a, stream);
        default:
            return launch_vec<1, 1>(p, a, stream);
        }
    } else {
        if (p.rows_per_warp != 2)
            return invalid("the FP8 GEMV takes 2 rows a warp from 2 tokens on");
        return launch_vec<TOK, 2>(p, a, stream);
    }
}

} // namespace

launch_status launch_gemv_fp8(const gemv_fp8_plan& p, const gemv_fp8_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    if (!p.vectorised) {
        const auto t = typed(a);
        const std::int64_t kchunk = (a.k + p.k_split - 1) / p.k_split;
        return status_of(launch_serialised_after(
            gemv_fp8_scalar, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads), stream,
            p.dependent_launch, t.x, t.w, a.scale, a.inc_scale, t.per_row, t.bias, t.y,
            static_cast<int>(a.tokens), a.n, a.k, a.ld_x, a.ld_w, a.ld_y, a.inc_x, a.inc_w,
            p.k_split, kchunk, p.row_blocks));
    }
    switch (a.tokens) {
    case 1:
        return launch_tokens<1>(p, a, stream);
    case 2:
        return launch_tokens<2>(p, a, stream);
    case 3:
        return launch_tokens<3>(p, a, stream);
    case 4:
        return launch_tokens<4>(p, a, stream);
    case 5:
        return launch_tokens<5>(p, a, stream);
    case 6:
        return launch_tokens<6>(p, a, stream);
    case 7:
        return launch_tokens<7>(p, a, stream);
    default:
        return launch_tokens<8>(p, a, stream);
    }
}

int gemv_fp8_code_version(int index) {
    int current = 0;
    if (cudaGetDevice(&current) != cudaSuccess)
        return 0;
    if (current != index && cudaSetDevice(index) != cudaSuccess)
        return 0;
    cudaFuncAttributes attr{};
    const cudaError_t e = cudaFuncGetAttributes(&attr, gemv_fp8_stream<1, 1>);
    if (current != index)
        cudaSetDevice(current);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); // not sticky: clear it so that the next launch does not see it
        return 0;
    }
    return attr.binaryVersion;
}

std::optional<std::string> gemv_fp8_unavailable(int index) {
    if (gemv_fp8_code_version(index) > 0)
        return std::nullopt;
    cudaDeviceProp prop{};
    const std::string device = cudaGetDeviceProperties(&prop, index) == cudaSuccess
                                   ? "sm_" + std::to_string(prop.major * 10 + prop.minor)
                                   : "device " + std::to_string(index);
    return "the FP8 GEMV is not compiled for this device (" + device +
           "): the build's CMAKE_CUDA_ARCHITECTURES hold no code that runs on it";
}

} // namespace fourfold::kernels
