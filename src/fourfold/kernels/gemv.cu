// Decode GEMV kernels (see gemv.hpp).
//
// A block is 8 warps: (8 / KS) row groups of R rows, each row group's K split over KS warps.
// Lane l of a warp reads 16-byte vectors l, l + 32, ... of its slice of each of its R rows, so a
// warp's load instruction covers 512 contiguous bytes of one row; U such loads per row are in
// flight before the first multiply. x (T x K, at most 8 x K) is read through the L1 cache and
// shared by the R rows. Partial sums are reduced over the lanes by shuffles and over the KS warps
// in shared memory; the bias is added in fp32 before the one rounding to the output dtype.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/gemv_claim.cuh"
#include "fourfold/kernels/gemv_cs.cuh"
#include "fourfold/kernels/reduce.cuh"

namespace fourfold::kernels {
namespace {

using namespace device;
using namespace gemv_common; // the prologues, gemv_claim, gemv_cs

// The bias of the row lane `lane` writes (lane r * tok + t writes row row0 + r), loaded before
// the row's weights so that its latency hides under theirs (read after the reduction, it was
// one more DRAM round trip: +4 % on a 3 µs call, build 21efb6d and e62084f).
template <typename T>
__device__ __forceinline__ float lane_bias(const T* __restrict__ bias, std::int64_t row0, int lane,
                                           int tok, int rows, std::int64_t n) {
    const int r = lane / tok;
    const std::int64_t row = row0 + r;
    return bias && r < rows && row < n ? element<T>::to_float(bias[row]) : 0.f;
}

// Reduces acc over the lanes and the KS warps of a row group, then writes y (+ bias).
template <typename T, int TOK, int R>
__device__ __forceinline__ void
finish_rows(float (&acc)[R][TOK], float (*part)[R * TOK], int warp, int lane, int ks, int ks_index,
            std::int64_t row0, std::int64_t n, int tokens, bool has_bias, float bias_value,
            T* __restrict__ y, std::int64_t ld_y) {
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
        // lane r * TOK + t writes element (t, row0 + r): one store per lane, no dynamic indexing
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                const std::int64_t row = row0 + r;
                if (lane == r * TOK + t && row < n && t < tokens) {
                    float v = acc[r][t];
                    if (has_bias)
                        v += bias_value;
                    y[t * ld_y + row] = element<T>::from_float(v);
                }
            }
    }
    if (ks > 1)
        __syncthreads(); // part is reused by the next row block
}

template <typename T, int TOK, int R>
__global__ void __launch_bounds__(256, gemv_fma_blocks_per_sm(TOK))
    gemv_vec(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
             T* __restrict__ y, std::int64_t n, std::int64_t nkv, std::int64_t ld_x,
             std::int64_t ld_w, std::int64_t ld_y, int ks, std::int64_t kchunk,
             std::int64_t row_blocks) {
    allow_dependents();
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 4 / R; // x 2 buffers: 8 vectors of a row in flight per lane
    using P = packet<T, VEC>;
    __shared__ float part[8][R * TOK];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups = 8 / ks, group = warp / ks, ks_index = warp % ks;
    const std::int64_t rows_per_block = static_cast<std::int64_t>(groups) * R;
    const std::int64_t kbeg = ks_index * kchunk;
    const std::int64_t kend = kbeg + kchunk < nkv ? kbeg + kchunk : nkv;
    dependency_wait(); // x is read and y written only below
    const uint4* xv[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        xv[t] = reinterpret_cast<const uint4*>(x + t * ld_x);

    for (std::int64_t rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
        const std::int64_t row0 = rb * rows_per_block + static_cast<std::int64_t>(group) * R;
        const uint4* wr[R];
        bool row_ok[R];
#pragma unroll
        for (int r = 0; r < R; ++r) {
            row_ok[r] = row0 + r < n;
            wr[r] = reinterpret_cast<const uint4*>(w + (row_ok[r] ? row0 + r : 0) * ld_w);
        }
        const float bias_value = lane_bias(bias, row0, lane, TOK, R, n);
        float acc[R][TOK];
#pragma unroll
        for (int r = 0; r < R; ++r)
#pragma unroll
            for (int t = 0; t < TOK; ++t)
                acc[r][t] = 0.f;

        // double-buffered: the next U vectors of every row are in flight while the current ones
        // are multiplied, so a lane never waits on an empty pipe between batches
        uint4 cur[U][R], nxt[U][R];
        auto fetch = [&](uint4(&dst)[U][R], std::int64_t v) {
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int r = 0; r < R; ++r) {
                    const std::int64_t vv = v + u * 32;
                    dst[u][r] = vv < kend && row_ok[r] ? load_streaming(wr[r] + vv)
                                                       : make_uint4(0, 0, 0, 0);
                }
        };
        fetch(cur, kbeg + lane);
        for (std::int64_t v = kbeg + lane; v < kend; v += 32 * U) {
            fetch(nxt, v + 32 * U);
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const std::int64_t vv = v + u * 32;
                if (vv >= kend)
                    continue; // (the loads were predicated alike)
                float wf[R][VEC];
#pragma unroll
                for (int r = 0; r < R; ++r)
                    P::unpack(cur[u][r], wf[r]);
#pragma unroll
                for (int t = 0; t < TOK; ++t) {
                    float xf[VEC];
                    P::unpack(__ldg(xv[t] + vv), xf);
#pragma unroll
                    for (int r = 0; r < R; ++r)
#pragma unroll
                        for (int j = 0; j < VEC; ++j)
                            acc[r][t] = fmaf(wf[r][j], xf[j], acc[r][t]);
                }
            }
#pragma unroll
            for (int u = 0; u < U; ++u)
#pragma unroll
                for (int r = 0; r < R; ++r)
                    cur[u][r] = nxt[u][r];
        }
        finish_rows<T, TOK, R>(acc, part, warp, lane, ks, ks_index, row0, n, TOK, bias != nullptr,
                               bias_value, y, ld_y);
    }
}

// Unsplit K (ks = 1) on a persistent grid: warp w of the grid takes row groups w, w + W, ...
// (W warps in the grid, R rows a group) and streams them back to back: the loads of a group's
// next step, or of the next group's first step, are issued before the current step is
// multiplied, so a warp's pipe never drains between rows (gemv_vec refills it once per row, a
// bubble of one DRAM latency per row for rows of a few KB). Short rows take R = 2 or 4 rows a
// group so that a step still has 8 vectors in flight per lane.
template <typename T, int TOK, int R>
__global__ void __launch_bounds__(256, gemv_fma_blocks_per_sm(TOK))
    gemv_stream(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                T* __restrict__ y, std::int64_t n, std::int64_t nkv, std::int64_t ld_x,
                std::int64_t ld_w, std::int64_t ld_y) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 4 / R; // vectors of each row per lane per step
    using P = packet<T, VEC>;
    const int lane = threadIdx.x % 32;
    const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
    const std::int64_t groups = (n + R - 1) / R;
    const std::int64_t steps = (nkv + 32 * U - 1) / (32 * U); // steps a row group takes
    allow_dependents();
    std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (g >= groups)
        return;
    // the group's first step into L2 while the kernel before may still run, then wait
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

    // the U x R vectors of step `s` of row group `grp` (zero past the row's end or past n)
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
    float bias_cur = lane_bias(bias, g * R, lane, TOK, R, n), bias_next = 0.f;
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
                bias_next = lane_bias(bias, g2 * R, lane, TOK, R, n);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const std::int64_t v = s * 32 * U + u * 32 + lane;
            if (v >= nkv)
                continue; // (the loads were zero alike)
            float wf[R][VEC];
#pragma unroll
            for (int r = 0; r < R; ++r)
                P::unpack(cur[u][r], wf[r]);
#pragma unroll
            for (int t = 0; t < TOK; ++t) {
                float xf[VEC];
                P::unpack(__ldg(xv[t] + v), xf);
#pragma unroll
                for (int r = 0; r < R; ++r)
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        acc[r][t] = fmaf(wf[r][j], xf[j], acc[r][t]);
            }
        }
        if (s == steps - 1) {
            // the group's last step: reduce over the lanes, lane r * TOK + t writes (t, row r)
#pragma unroll
            for (int r = 0; r < R; ++r)
#pragma unroll
                for (int t = 0; t < TOK; ++t) {
                    const float sum = warp_sum(acc[r][t]);
                    const std::int64_t row = g * R + r;
                    if (lane == r * TOK + t && row < n) {
                        float v = sum;
                        if (bias)
                            v += bias_cur;
                        y[t * ld_y + row] = element<T>::from_float(v);
                    }
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
            bias_cur = bias_next;
        g = g2;
        s = s2;
    }
}

// Rows split evenly over the warps of a block. Block b takes the contiguous rows
// [b N / B, (b + 1) N / B) (their counts differ by one at most); their steps (U = 4 vectors a
// lane, 2 KB a warp) laid end to end are cut into 8 equal runs, one a warp, so every warp of the
// grid streams the same number of steps give or take one. A warp's run crosses row boundaries
// as gemv_stream does (the next step's loads in flight across them). A row that lies wholly in
// one run is written by its warp at once; a row cut between runs leaves a partial sum in shared
// memory (the first warps' as `tail`, the warp holding the row's last step as `head`), and after
// one block barrier that last warp adds them in warp order (deterministic) and writes the row.
// Why: with rows as the unit of work, N rows over W resident warps take ceil(N / W) row times
// where N / W would do (14336 rows: 4 where 3.4 would; 6144: 2 where 1.45 would).
// PRO: the prologue (gemv_claim.cuh's k_pro_*).
template <typename T, int TOK, int PRO>
__global__ void __launch_bounds__(256, gemv_fma_blocks_per_sm(TOK))
    gemv_balanced(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                  T* __restrict__ y, std::int64_t n, std::int64_t nkv, std::int64_t ld_x,
                  std::int64_t ld_w, std::int64_t ld_y, const T* __restrict__ norm_weight,
                  float norm_eps) {
    constexpr int VEC = 16 / sizeof(T);
    constexpr int U = 4;
    using P = packet<T, VEC>;
    __shared__ float head[8][TOK], tail[8][TOK];
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
    const uint4* xv[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        xv[t] = reinterpret_cast<const uint4*>(x + t * ld_x);
    const uint4* w0 = reinterpret_cast<const uint4*>(w + r0 * ld_w);
    const std::int64_t ldv = ld_w / VEC; // row stride in vectors
    auto fetch = [&](uint4(&dst)[U], int row, int s) {
        const uint4* wr = w0 + row * ldv;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            dst[u] = v < kv ? load_streaming(wr + v) : make_uint4(0, 0, 0, 0);
        }
    };
    auto bias_of = [&](int row) {
        return bias != nullptr && lane < TOK ? element<T>::to_float(bias[r0 + row]) : 0.f;
    };
    float acc[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        acc[t] = 0.f;
    // the run's first step: its row and step in the row, one division (the steps after it by
    // an increment, as the loop below goes)
    int row = lo / steps, s = lo - row * steps;
    // the run's first two steps into L2 while the kernel before may still run, then wait
    if (lane % 8 == 0)
        for (int i = lo, pr = row, ps = s; i < lo + 2 && i < hi; ++i) {
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int v = ps * 32 * U + u * 32 + lane;
                if (v < kv)
                    prefetch_l2(w0 + pr * ldv + v);
            }
            if (++ps == steps) {
                ps = 0;
                ++pr;
            }
        }
    dependency_wait();
    // the run's first step into registers before the norm prologue, so its DRAM round trip
    // overlaps the prologue's reads of x through L2 (the weights are not the launch before's
    // output; after the wait all the same, as the op benchmark makes no exception). Not before
    // the SwiGLU prologue: its batches of x take those registers (one token: 16 bytes spilled).
    uint4 cur[U], nxt[U];
    if (PRO != k_pro_swiglu && lo < hi)
        fetch(cur, row, s);
    extern __shared__ uint4 normed[]; // PRO: T x kv vectors of the x the steps read
    if constexpr (PRO == k_pro_swiglu) {
        prologue_swiglu<T, TOK>(xv, normed, kv);
        if (lo < hi)
            fetch(cur, row, s);
        __syncthreads();
    }
    if constexpr (PRO == k_pro_norm) {
        prologue_norm<T, TOK>(xv, normed, kv, norm_weight, norm_eps);
        __syncthreads();
    }
    if (lo < hi) {
        const int first_row = row;
        const bool first_cut = s != 0; // the run starts inside its first row
        float bias_cur = bias_of(row), bias_next = 0.f;
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
                    bias_next = bias_of(row2);
            }
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const int v = s * 32 * U + u * 32 + lane;
                if (v >= kv)
                    continue; // (the loads were zero alike)
                float wf[VEC];
                P::unpack(cur[u], wf);
#pragma unroll
                for (int t = 0; t < TOK; ++t) {
                    float xf[VEC];
                    if constexpr (PRO != k_pro_none) {
                        // one 16-byte shared load into a register, then unpacked (unpacking
                        // the shared word in place compiled to eight 2-byte loads: 35-43 %
                        // slower on the H200, d6264c7 and 0b195a6)
                        const uint4 r = xv[t][v];
                        P::unpack(r, xf);
                    } else
                        P::unpack(__ldg(xv[t] + v), xf);
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        acc[t] = fmaf(wf[j], xf[j], acc[t]);
                }
            }
            const bool row_ends = s == steps - 1;
            if (row_ends || !more) {
                // lane t holds token t's sum of this run's part of the row
                const bool whole = row_ends && !(row == first_row && first_cut);
#pragma unroll
                for (int t = 0; t < TOK; ++t) {
                    const float sum = warp_sum(acc[t]);
                    if (lane == t) {
                        if (whole) {
                            y[t * ld_y + r0 + row] = element<T>::from_float(sum + bias_cur);
                        } else if (row_ends) { // cut, and this run holds its last step
                            head[warp][t] = sum;
                            if (t == 0)
                                head_row[warp] = row;
                        } else { // cut, and the row goes on in the next run
                            tail[warp][t] = sum;
                            if (t == 0)
                                tail_row[warp] = row;
                        }
                    }
                    acc[t] = 0.f;
                }
            }
            if (!more)
                break;
#pragma unroll
            for (int u = 0; u < U; ++u)
                cur[u] = nxt[u];
            if (s2 == 0)
                bias_cur = bias_next;
            row = row2;
            s = s2;
        }
    }
    __syncthreads();
    const int hr = head_row[warp];
    if (hr >= 0 && lane < TOK) {
        float v = head[warp][lane];
        for (int j = warp - 1; j >= 0 && tail_row[j] == hr; --j)
            v += tail[j][lane];
        v += bias_of(hr);
        y[lane * ld_y + r0 + hr] = element<T>::from_float(v);
    }
}

// Any alignment and any strides: one element per lane per step, tokens up to 8 at run time.
template <typename T>
__global__ void __launch_bounds__(256, 1)
    gemv_scalar(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                T* __restrict__ y, int tokens, std::int64_t n, std::int64_t k, std::int64_t ld_x,
                std::int64_t ld_w, std::int64_t ld_y, std::int64_t inc_x, std::int64_t inc_w,
                int ks, std::int64_t kchunk, std::int64_t row_blocks) {
    allow_dependents();
    dependency_wait(); // x is read from the start
    constexpr int TOK = k_gemv_max_tokens;
    __shared__ float part[8][TOK];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups = 8 / ks, group = warp / ks, ks_index = warp % ks;
    const std::int64_t kbeg = ks_index * kchunk;
    const std::int64_t kend = kbeg + kchunk < k ? kbeg + kchunk : k;
    for (std::int64_t rb = blockIdx.x; rb < row_blocks; rb += gridDim.x) {
        const std::int64_t row0 = rb * groups + group;
        const float bias_value = lane_bias(bias, row0, lane, TOK, 1, n);
        float acc[1][TOK];
#pragma unroll
        for (int t = 0; t < TOK; ++t)
            acc[0][t] = 0.f;
        if (row0 < n) {
            const T* wr = w + row0 * ld_w;
            for (std::int64_t i = kbeg + lane; i < kend; i += 32) {
                const float wf = element<T>::to_float(wr[i * inc_w]);
#pragma unroll
                for (int t = 0; t < TOK; ++t)
                    if (t < tokens)
                        acc[0][t] =
                            fmaf(wf, element<T>::to_float(x[t * ld_x + i * inc_x]), acc[0][t]);
            }
        }
        finish_rows<T, TOK, 1>(acc, part, warp, lane, ks, ks_index, row0, n, tokens,
                               bias != nullptr, bias_value, y, ld_y);
    }
}

// Tensor-core GEMV for 2..8 tokens (bf16/fp16, K a multiple of 32): a warp owns a tile of 16
// rows and a slice of K; per 32 columns each lane loads 16 bytes of row g and of row g + 8
// (g = lane / 4) and 16 bytes of x for token g, and issues two m16n8k16 MMAs with fp32
// accumulators. The MMA's k order is a fixed permutation of the 32 columns shared by its A and
// B fragments (lane c = lane % 4 holds columns 8c..8c+7), so the dot products are unchanged and
// every load is a plain 16-byte one. The accumulator fragment holds (row g or g + 8, tokens
// 2c and 2c + 1): no reduction over lanes, only over the KS warps of a K split.
template <typename T> struct mma_op;
template <> struct mma_op<__nv_bfloat16> {
    __device__ static void run(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};
template <> struct mma_op<__half> {
    __device__ static void run(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <typename T>
__global__ void __launch_bounds__(256, k_gemv_mma_blocks_per_sm)
    gemv_mma(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
             T* __restrict__ y, int tokens, std::int64_t n, std::int64_t kblocks, std::int64_t ld_x,
             std::int64_t ld_w, std::int64_t ld_y, int ks, std::int64_t kbchunk) {
    allow_dependents();
    dependency_wait();   // x is read from the start
    constexpr int U = 4; // 32-column blocks in flight per iteration
    __shared__ float part[8][32][4];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, c = lane % 4;
    const int tiles = 8 / ks, tile = warp / ks, ks_index = warp % ks;
    const std::int64_t row0 = (static_cast<std::int64_t>(blockIdx.x) * tiles + tile) * 16;
    const std::int64_t kb_begin = ks_index * kbchunk;
    const std::int64_t kb_end = kb_begin + kbchunk < kblocks ? kb_begin + kbchunk : kblocks;
    const bool ok_lo = row0 + g < n, ok_hi = row0 + g + 8 < n, ok_x = g < tokens;
    // the bias of rows g and g + 8, loaded before the weights (see lane_bias)
    const float bias_lo = bias && ok_lo ? element<T>::to_float(bias[row0 + g]) : 0.f;
    const float bias_hi = bias && ok_hi ? element<T>::to_float(bias[row0 + g + 8]) : 0.f;
    const uint4* wlo = reinterpret_cast<const uint4*>(w + (ok_lo ? row0 + g : 0) * ld_w) + c;
    const uint4* whi = reinterpret_cast<const uint4*>(w + (ok_hi ? row0 + g + 8 : 0) * ld_w) + c;
    const uint4* xg = reinterpret_cast<const uint4*>(x + (ok_x ? g : 0) * ld_x) + c;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    for (std::int64_t kb = kb_begin; kb < kb_end; kb += U) {
        uint4 lo[U], hi[U], xv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const bool in = kb + u < kb_end;
            const std::int64_t off = (kb + u) * 4; // 16-byte vectors per 32 columns
            lo[u] = in && ok_lo ? load_streaming_l1_only(wlo + off) : zero;
            hi[u] = in && ok_hi ? load_streaming_l1_only(whi + off) : zero;
            xv[u] = in && ok_x ? __ldg(xg + off) : zero;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const unsigned a0[4] = {lo[u].x, hi[u].x, lo[u].y, hi[u].y};
            const unsigned b0[2] = {xv[u].x, xv[u].y};
            mma_op<T>::run(acc, a0, b0);
            const unsigned a1[4] = {lo[u].z, hi[u].z, lo[u].w, hi[u].w};
            const unsigned b1[2] = {xv[u].z, xv[u].w};
            mma_op<T>::run(acc, a1, b1);
        }
    }
    if (ks > 1) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            part[warp][lane][i] = acc[i];
        __syncthreads();
        if (ks_index == 0) {
            for (int j = 1; j < ks; ++j)
#pragma unroll
                for (int i = 0; i < 4; ++i)
                    acc[i] += part[warp + j][lane][i];
        }
    }
    if (ks_index != 0)
        return;
        // acc: (row g, token 2c), (row g, token 2c + 1), (row g + 8, token 2c), (row g + 8, 2c + 1)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const std::int64_t row = row0 + g + (i >= 2 ? 8 : 0);
        const int t = 2 * c + (i & 1);
        if (row < n && t < tokens) {
            float v = acc[i];
            if (bias)
                v += i >= 2 ? bias_hi : bias_lo;
            y[t * ld_y + row] = element<T>::from_float(v);
        }
    }
}

// The same MMAs in rounds (gemv_plan::mma_rounds; weights of 64 MiB or more, measured in
// gemv_plan.cpp): a block of ks warps (1..8, the plan's k_split) takes one 16-row tile a round, its
// warps splitting the tile's K into ks chunks of near-equal 32-column units; block b takes tiles
// b, b + B, ..., with B chosen by the plan so that every block has the same number of tiles and
// all are resident at once. gemv_mma's grid is one tile group a block: where the groups pass
// the resident blocks (the 128,256 x 4096 LM head: 1002 blocks over 396 slots) its last wave is
// part empty, the cause read from session 25's figures (291 µs against stock's 241). A lane
// loads two 32-column units a step, the next step's loads issued before this step's MMAs (two
// register sets), across the end of a tile too. The ks sums of a tile meet in shared memory
// (two buffers by the round's parity, one block barrier a round: the buffer of round r is
// written again only after round r + 1's barrier, which its reader passes once it has read),
// and warp r % ks adds them in warp order, then writes the tile.
template <typename T>
__global__ void __launch_bounds__(256, k_gemv_mma_blocks_per_sm)
    gemv_mma_rounds(const T* __restrict__ x, const T* __restrict__ w, const T* __restrict__ bias,
                    T* __restrict__ y, int tokens, int n, int kblocks, std::int64_t ld_x,
                    std::int64_t ld_w, std::int64_t ld_y, int tiles) {
    constexpr int U = 2;                 // 32-column units a lane loads a step
    extern __shared__ float4 mma_part[]; // ks > 1: [2][ks][32], a lane's 4 sums
    allow_dependents();
    const int ks = static_cast<int>(blockDim.x / 32);
    const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
    const int g = lane / 4, c = lane % 4;
    const int chunk = (kblocks + ks - 1) / ks;
    const int kb_begin = min(warp * chunk, kblocks);
    const int units = min(kb_begin + chunk, kblocks) - kb_begin; // this warp's, of a tile
    dependency_wait();                     // x is read and y written only below
    const int steps = (chunk + U - 1) / U; // a tile's steps: the same for every warp of the block
    const int stride = static_cast<int>(gridDim.x);
    const int rounds = (tiles - static_cast<int>(blockIdx.x) + stride - 1) / stride;
    const int total = rounds * steps; // the plan keeps it below 2^31
    const bool ok_x = g < tokens;
    // lane (g, c)'s first vector of x (token g) and of W (row g of the block's first tile) in
    // this warp's K chunk; a round moves W on by `stride` tiles
    const uint4* xg = reinterpret_cast<const uint4*>(x + (ok_x ? g : 0) * ld_x) + c + kb_begin * 4;
    const std::int64_t ldv = ld_w / 8; // W's row stride in 16-byte vectors
    const uint4* w0 = reinterpret_cast<const uint4*>(w) +
                      (std::int64_t{blockIdx.x} * 16 + g) * ldv + c + kb_begin * 4;
    const std::int64_t round_vectors = std::int64_t{stride} * 16 * ldv;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    struct step_regs {
        uint4 lo[U], hi[U], xv[U];
    };
    // the next step to load: its tile's rows (row g of it at wl), the step within the tile
    const uint4* wl = w0;
    int load_row = static_cast<int>(blockIdx.x) * 16 + g, load_step = 0;
    const auto load_next = [&](step_regs& b) {
        const bool ok_lo = load_row < n, ok_hi = load_row + 8 < n;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int unit = load_step * U + u;
            const bool in = unit < units;
            const int off = unit * 4; // 16-byte vectors per 32 columns
            b.lo[u] = in && ok_lo ? load_streaming_l1_only(wl + off) : zero;
            b.hi[u] = in && ok_hi ? load_streaming_l1_only(wl + 8 * ldv + off) : zero;
            b.xv[u] = in && ok_x ? __ldg(xg + off) : zero;
        }
        if (++load_step == steps) {
            load_step = 0;
            wl += round_vectors;
            load_row += stride * 16;
        }
    };
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    int mul_tile = static_cast<int>(blockIdx.x), mul_round = 0, mul_step = 0;
    // the end of a round's tile: the ks sums added in warp order, the bias, one rounding
    const auto finish = [&]() {
        float v[4] = {acc[0], acc[1], acc[2], acc[3]};
        int writer = 0;
        if (ks > 1) {
            float4* part = mma_part + (mul_round & 1) * ks * 32;
            part[warp * 32 + lane] = make_float4(acc[0], acc[1], acc[2], acc[3]);
            __syncthreads();
            writer = mul_round % ks;
            if (warp == writer) {
                float4 s = make_float4(0.f, 0.f, 0.f, 0.f);
                for (int j = 0; j < ks; ++j) {
                    const float4 q = part[j * 32 + lane];
                    s.x += q.x;
                    s.y += q.y;
                    s.z += q.z;
                    s.w += q.w;
                }
                v[0] = s.x;
                v[1] = s.y;
                v[2] = s.z;
                v[3] = s.w;
            }
        }
        if (warp == writer) {
            // v: rows g, g, g + 8, g + 8 with tokens 2c, 2c + 1, 2c, 2c + 1
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int row = mul_tile * 16 + g + (i >= 2 ? 8 : 0);
                const int t = 2 * c + (i & 1);
                if (row < n && t < tokens) {
                    float o = v[i];
                    if (bias)
                        o += element<T>::to_float(bias[row]);
                    y[t * ld_y + row] = element<T>::from_float(o);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < 4; ++i)
            acc[i] = 0.f;
    };
    const auto multiply_next = [&](const step_regs& b) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const unsigned a0[4] = {b.lo[u].x, b.hi[u].x, b.lo[u].y, b.hi[u].y};
            const unsigned b0[2] = {b.xv[u].x, b.xv[u].y};
            mma_op<T>::run(acc, a0, b0);
            const unsigned a1[4] = {b.lo[u].z, b.hi[u].z, b.lo[u].w, b.hi[u].w};
            const unsigned b1[2] = {b.xv[u].z, b.xv[u].w};
            mma_op<T>::run(acc, a1, b1);
        }
        if (++mul_step == steps) {
            finish();
            mul_step = 0;
            mul_tile += stride;
            ++mul_round;
        }
    };
    step_regs ra, rb;
    if (total > 0)
        load_next(ra);
    for (int j = 0; j < total; j += 2) {
        if (j + 1 < total)
            load_next(rb);
        multiply_next(ra);
        if (j + 1 < total) {
            if (j + 2 < total)
                load_next(ra);
            multiply_next(rb);
        }
    }
}

template <typename T>
launch_status launch_mma_rounds(const gemv_plan& p, const gemv_args& a, stream_t stream) {
    return status_of(launch_serialised_after_smem(
        gemv_mma_rounds<T>, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads),
        static_cast<std::size_t>(p.shared_bytes), stream, p.dependent_launch,
        static_cast<const T*>(a.x), static_cast<const T*>(a.w), static_cast<const T*>(a.bias),
        static_cast<T*>(a.y), static_cast<int>(a.tokens), static_cast<int>(a.n),
        static_cast<int>(a.k / 32), a.ld_x, a.ld_w, a.ld_y, static_cast<int>((a.n + 15) / 16)));
}

template <typename T>
launch_status launch_mma(const gemv_plan& p, const gemv_args& a, stream_t stream) {
    const std::int64_t kblocks = a.k / 32;
    const std::int64_t kbchunk = (kblocks + p.k_split - 1) / p.k_split;
    return status_of(launch_serialised_after(
        gemv_mma<T>, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads), stream,
        p.dependent_launch, static_cast<const T*>(a.x), static_cast<const T*>(a.w),
        static_cast<const T*>(a.bias), static_cast<T*>(a.y), static_cast<int>(a.tokens), a.n,
        kblocks, a.ld_x, a.ld_w, a.ld_y, p.k_split, kbchunk));
}

template <typename T, int TOK>
launch_status launch_vec(const gemv_plan& p, const gemv_args& a, stream_t stream) {
    constexpr int VEC = 16 / sizeof(T);
    const std::int64_t nkv = a.k / VEC;
    const std::int64_t kchunk = (nkv + p.k_split - 1) / p.k_split;
    const std::int64_t rows_per_block = (p.threads / 32 / p.k_split) * p.rows_per_warp;
    const std::int64_t row_blocks = (a.n + rows_per_block - 1) / rows_per_block;
    const auto* x = static_cast<const T*>(a.x);
    const auto* w = static_cast<const T*>(a.w);
    const auto* b = static_cast<const T*>(a.bias);
    auto* y = static_cast<T*>(a.y);
    const dim3 grid(static_cast<unsigned>(p.blocks)), block(p.threads);
    const bool dep = p.dependent_launch;
    auto launch = [&](auto kernel, auto... extra) {
        return status_of(launch_serialised_after(kernel, grid, block, stream, dep, x, w, b, y, a.n,
                                                 nkv, a.ld_x, a.ld_w, a.ld_y, extra...));
    };
    if (p.column_stationary) {
        if constexpr (TOK == 1 && sizeof(T) == 2) {
            using F = same_weights<T>;
            const auto* nw = static_cast<const T*>(a.norm_weight);
            const auto eps = static_cast<float>(a.norm_eps);
            auto run = [&](auto kernel) {
                return status_of(launch_serialised_after_smem(
                    kernel, grid, block, p.shared_bytes, stream, dep, x, w,
                    static_cast<const float*>(nullptr), std::int64_t{0}, false, b, y, a.n, nkv,
                    a.ld_w, p.slices, p.slice_rows, nw, eps, p.epilogue_prefetch, p.cs_fetch_first,
                    p.cs_l2_rows));
            };
            constexpr int H = k_cs_half_warps; // two blocks an SM (FOURFOLD_GEMV_CS_HALF=1)
            const bool half = p.threads == H * 32;
            if (p.fused_swiglu)
                return half ? run(gemv_cs<F, k_cs_swiglu_slices, H>)
                            : run(gemv_cs<F, k_cs_swiglu_slices>);
            if (p.fused_norm)
                return half ? run(gemv_cs<F, k_pro_norm, H>) : run(gemv_cs<F, k_pro_norm>);
            return half ? run(gemv_cs<F, k_pro_none, H>) : run(gemv_cs<F, k_pro_none>);
        }
        return invalid("the column-stationary GEMV takes one token of 2-byte elements");
    }
    if (p.balanced) {
        const auto* nw = static_cast<const T*>(a.norm_weight);
        const auto eps = static_cast<float>(a.norm_eps);
        if constexpr (TOK == 1)
            if (p.claimed) {
                auto run = [&](auto kernel) {
                    return status_of(launch_serialised_after_smem(
                        kernel, grid, block, p.shared_bytes, stream, dep, x, w, b, y, a.n, nkv,
                        a.ld_w, nw, eps, static_cast<const float*>(nullptr), std::int64_t{0}, false,
                        p.epilogue_prefetch));
                };
                using F = same_weights<T>;
                return p.fused_norm     ? run(gemv_claim<F, k_pro_norm>)
                       : p.fused_swiglu ? run(gemv_claim<F, k_pro_swiglu>)
                                        : run(gemv_claim<F, k_pro_none>);
            }
        if (p.fused_norm || p.fused_swiglu)
            return status_of(
                launch_serialised_after_smem(p.fused_norm ? gemv_balanced<T, TOK, k_pro_norm>
                                                          : gemv_balanced<T, TOK, k_pro_swiglu>,
                                             grid, block, p.shared_bytes, stream, dep, x, w, b, y,
                                             a.n, nkv, a.ld_x, a.ld_w, a.ld_y, nw, eps));
        return launch(gemv_balanced<T, TOK, k_pro_none>, nw, eps);
    }
    if (p.streamed) {
        switch (p.rows_per_warp) {
        case 4:
            return launch(gemv_stream<T, TOK, 4>);
        case 2:
            return launch(gemv_stream<T, TOK, 2>);
        default:
            return launch(gemv_stream<T, TOK, 1>);
        }
    }
    return launch(gemv_vec<T, TOK, 1>, p.k_split, kchunk, row_blocks);
}

template <typename T>
launch_status launch_typed(const gemv_plan& p, const gemv_args& a, stream_t stream) {
    if (!p.vectorised) {
        const std::int64_t kchunk = (a.k + p.k_split - 1) / p.k_split;
        const std::int64_t rows_per_block = p.threads / 32 / p.k_split;
        const std::int64_t row_blocks = (a.n + rows_per_block - 1) / rows_per_block;
        return status_of(launch_serialised_after(
            gemv_scalar<T>, dim3(static_cast<unsigned>(p.blocks)), dim3(p.threads), stream,
            p.dependent_launch, static_cast<const T*>(a.x), static_cast<const T*>(a.w),
            static_cast<const T*>(a.bias), static_cast<T*>(a.y), static_cast<int>(a.tokens), a.n,
            a.k, a.ld_x, a.ld_w, a.ld_y, a.inc_x, a.inc_w, p.k_split, kchunk, row_blocks));
    }
    if constexpr (sizeof(T) == 2)
        if (p.tensor_cores)
            return p.mma_rounds > 0 ? launch_mma_rounds<T>(p, a, stream)
                                    : launch_mma<T>(p, a, stream);
    switch (a.tokens) {
    case 1:
        return launch_vec<T, 1>(p, a, stream);
    case 2:
        return launch_vec<T, 2>(p, a, stream);
    case 3:
        return launch_vec<T, 3>(p, a, stream);
    case 4:
        return launch_vec<T, 4>(p, a, stream);
    case 5:
        return launch_vec<T, 5>(p, a, stream);
    case 6:
        return launch_vec<T, 6>(p, a, stream);
    case 7:
        return launch_vec<T, 7>(p, a, stream);
    default:
        return launch_vec<T, 8>(p, a, stream);
    }
}

} // namespace

launch_status launch_gemv(const gemv_plan& p, const gemv_args& a, stream_t stream) {
    if (!p.valid.empty())
        return invalid(p.valid);
    return by_element(a.type, [&](auto t) { return launch_typed<decltype(t)>(p, a, stream); });
}

} // namespace fourfold::kernels
