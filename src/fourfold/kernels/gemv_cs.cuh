#pragma once
// The column-stationary one-token GEMV (session 40; gemv_fp8_plan::column_stationary over e4m3
// weights, gemv_plan::column_stationary over bf16 and fp16 ones), over a weight format of
// gemv_claim.cuh with, besides what gemv_claim takes:
//   x_floats (x values one 16-byte weight vector multiplies), unpack_x(r, f) (one 16-byte vector
//   of x to floats), and dot_regs(acc, wv, xf): acc + the weight vector wv times the x_floats
//   values xf, fp32, in a fixed order.
//
// A warp owns one slice of K (k_gemv_cs_vectors 16-byte weight vectors a lane: 1 KB of a row) down
// a contiguous run of rows, so it loads and widens the slice's x once, into registers, and each row
// then costs its weight loads, their conversion and the FMAs alone (the FP8 GEMV's missing
// bandwidth was on x's side, session 39). k_gemv_cs_depth rows of the slice are in flight (a ring
// of registers); the sums of 8 rows are reduced across the warp at once (9 shuffles where 8 warp
// sums take 40). The block's WARPS warps (16: one block an SM; 8: two, gemv.hpp's cs_half_wanted)
// are WARPS / S row runs of S slices (S = the plan's `slices`; warps past WARPS / S runs idle),
// each run's warps adding their slices' sums in slice order through shared memory once all rows are
// done (deterministic). The prologue (PRO) makes x in shared memory once a block as gemv_claim's
// does, and each warp reads its slice from there; PRO = k_cs_swiglu_slices makes each warp compute
// the SwiGLU of its own slice from [gate | up] in global memory, with the block prologue's value
// and rounding: no x in shared memory, no barrier before the rows. Its loads of [gate | up], and of
// x without a prologue, are load_after_wait's (elements.cuh): with __ldg ptxas placed the first of
// them above griddepcontrol.wait (the SASS, session 42), and the FP8 SwiGLU gave llama3-8b fp8 a
// relative L2 of 0.27 (session 41).
#include "fourfold/kernels/gemv_claim.cuh"

namespace fourfold::kernels::gemv_common {

constexpr int k_cs_warps = k_gemv_cs_threads / 32;
constexpr int k_cs_half_warps = k_cs_warps / 2; // cs_half_wanted (gemv.hpp): two blocks an SM
constexpr int k_cs_batch = 8;                   // rows whose sums are reduced together
constexpr int k_cs_swiglu_slices = 3;

// nkv: a row's 16-byte weight vectors; ld_w: W's row stride in W elements; scale (scaled formats):
// one float, or one a row `inc_scale` apart when per_row; max_rows: the longest run's rows (the
// plan's slice_rows), the stride of each warp's sums in shared memory. prefetch: the plan's
// epilogue_prefetch (gemv.hpp's k_gemv_cs_epilogue_bytes after the sums: thread t's first
// epilogue row's bias as the 4-byte word that holds it, then its scale). fetch_first: see below.
// l2_rows: the rows of the slice asked of L2 before the dependency wait.
template <typename F, int PRO, int WARPS = k_cs_warps>
__global__ void __launch_bounds__(WARPS * 32, k_cs_warps / WARPS)
    gemv_cs(const typename F::X* __restrict__ x, const typename F::W* __restrict__ w,
            const float* __restrict__ scale, std::int64_t inc_scale, bool per_row,
            const typename F::X* __restrict__ bias, typename F::X* __restrict__ y, std::int64_t n,
            std::int64_t nkv, std::int64_t ld_w, int slices, int max_rows,
            const typename F::X* __restrict__ norm_weight, float norm_eps, bool prefetch,
            bool fetch_first, int l2_rows) {
    using X = typename F::X;
    static_assert(sizeof(X) == 2, "x, the bias and y are 2-byte elements");
    constexpr int U = k_gemv_cs_vectors, DEPTH = k_gemv_cs_depth, RB = k_cs_batch;
    constexpr int XV = F::x_vectors, XVEC = 16 / sizeof(X), XF = F::x_floats;
    constexpr int WVEC = 16 / sizeof(typename F::W);
    static_assert(XF == XV * XVEC, "a weight vector multiplies x_vectors whole vectors of x");
    static_assert(RB % DEPTH == 0, "the ring's slots are fixed at compile time");
    static_assert(WARPS == k_cs_warps || WARPS == k_cs_half_warps, "one or two blocks an SM");
    constexpr int THREADS = WARPS * 32;
    // the prologues that make x in shared memory once a block
    constexpr bool SHARED_X = PRO == k_pro_norm || PRO == k_pro_swiglu;
    extern __shared__ uint4 smem[]; // SHARED_X: x (XV nkv vectors); then WARPS x max_rows floats
    allow_dependents();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int runs = WARPS / slices; // row runs a block
    const int slice = warp % slices, run = warp / slices;
    const std::int64_t all_runs = std::int64_t{gridDim.x} * runs;
    const std::int64_t g = std::int64_t{blockIdx.x} * runs + run;
    const std::int64_t r0 = run < runs ? g * n / all_runs : 0;
    const int rows = run < runs ? static_cast<int>((g + 1) * n / all_runs - r0) : 0;
    const int kv = static_cast<int>(nkv); // the plan keeps n and k below 2^31
    const int xkv = XV * kv;              // x's 16-byte vectors
    float* part = reinterpret_cast<float*>(smem + (SHARED_X ? xkv : 0));
    const std::int64_t ldv = ld_w / WVEC; // W's row stride in vectors
    const uint4* wr = reinterpret_cast<const uint4*>(w + r0 * ld_w);
    const int v0 = slice * 32 * U + lane; // the lane's first vector of a row
    // the first l2_rows rows of the slice (the plan's cs_l2_rows) into L2 while the kernel before
    // may still run, then wait
    if (lane % 8 == 0)
        for (int r = 0; r < l2_rows && r < rows; ++r)
#pragma unroll
            for (int u = 0; u < U; ++u)
                if (v0 + 32 * u < kv)
                    prefetch_l2(wr + r * ldv + v0 + 32 * u);
    dependency_wait();
    const auto fetch = [&](uint4(&dst)[U], int row) {
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = v0 + 32 * u;
            dst[u] =
                row < rows && v < kv ? load_streaming(wr + row * ldv + v) : make_uint4(0, 0, 0, 0);
        }
    };
    uint4 buf[DEPTH][U];
    const uint4* xv[1] = {reinterpret_cast<const uint4*>(x)};
    // fetch_first (the plan's cs_fetch_first, the norm prologue only): the ring's first rows into
    // registers before the prologue, so their DRAM round trip overlaps its reads of x, its block
    // sum and its barrier, as gemv_balanced does (the weights are not the launch before's output;
    // after the wait all the same, as the op benchmark makes no exception)
    const bool early = PRO == k_pro_norm && fetch_first;
    if (early)
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
            fetch(buf[d], d);
    if constexpr (PRO == k_pro_norm)
        prologue_norm<X, 1>(xv, smem, xkv, norm_weight, norm_eps);
    if constexpr (PRO == k_pro_swiglu)
        prologue_swiglu<X, 1>(xv, smem, xkv);
    if constexpr (SHARED_X)
        __syncthreads(); // x in shared memory
    if (!early)
#pragma unroll
        for (int d = 0; d < DEPTH; ++d)
            fetch(buf[d], d);
    // The epilogue's first row of this thread: its bias and scale into shared memory now, by
    // cp.async (no register held down the rows), where the epilogue would load them after its
    // barrier. The epilogue's mapping: entry i = threadIdx.x of the block's runs x max_rows.
    auto* pre = reinterpret_cast<unsigned*>(part + WARPS * max_rows);
    if (prefetch && static_cast<int>(threadIdx.x) < runs * max_rows) {
        const int q = static_cast<int>(threadIdx.x) / max_rows;
        const int r = static_cast<int>(threadIdx.x) - q * max_rows;
        const std::int64_t gq = std::int64_t{blockIdx.x} * runs + q;
        const std::int64_t a0 = gq * n / all_runs;
        if (r < (gq + 1) * n / all_runs - a0)
            fetch_epilogue<F>(pre, THREADS, a0 + r, n, scale, inc_scale, per_row, bias);
    }
    // the slice's x as floats (XF a weight vector: x's vectors XV v .. XV v + XV - 1)
    float xf[U][XF];
#pragma unroll
    for (int u = 0; u < U; ++u) {
        const int v = v0 + 32 * u;
#pragma unroll
        for (int h = 0; h < XV; ++h) {
            uint4 r = make_uint4(0, 0, 0, 0);
            if constexpr (PRO == k_cs_swiglu_slices) {
                // [gate | up]: round_X(silu(gate) * up), prologue_swiglu's value
                uint4 ur = make_uint4(0, 0, 0, 0);
                if (v < kv) {
                    r = load_after_wait(xv[0] + XV * v + h);
                    ur = load_after_wait(xv[0] + xkv + XV * v + h);
                }
                float gf[XVEC], up[XVEC];
                F::unpack_x(r, gf);
                F::unpack_x(ur, up);
#pragma unroll
                for (int j = 0; j < XVEC; ++j)
                    xf[u][XVEC * h + j] =
                        element<X>::to_float(element<X>::from_float(silu(gf[j]) * up[j]));
            } else {
                if (v < kv)
                    r = SHARED_X ? xv[0][XV * v + h] : load_after_wait(xv[0] + XV * v + h);
                F::unpack_x(r, &xf[u][XVEC * h]);
            }
        }
    }
    for (int rb = 0; rb < rows; rb += RB) {
        float acc[RB];
#pragma unroll
        for (int j = 0; j < RB; ++j) {
            float a = 0.f;
#pragma unroll
            for (int u = 0; u < U; ++u)
                a = F::dot_regs(a, buf[j % DEPTH][u], xf[u]);
            acc[j] = a;
            fetch(buf[j % DEPTH], rb + j + DEPTH);
        }
        const float sum = warp_sum_8(acc); // lane 4 q: row q of the batch
        const int row = rb + lane / 4;
        if (lane % 4 == 0 && row < rows)
            part[warp * max_rows + row] = sum;
    }
    if (prefetch)
        copy_async_wait_all(); // (each thread reads its own copies)
    __syncthreads();
    // each run's rows: the slices' sums in slice order, times the scale (scaled formats), plus
    // the bias, rounded once
    const epilogue_inputs<F> in{pre, THREADS, scale, inc_scale, per_row, bias};
    for (int i = threadIdx.x; i < runs * max_rows; i += blockDim.x) {
        const int q = i / max_rows, r = i - q * max_rows;
        const std::int64_t gq = std::int64_t{blockIdx.x} * runs + q;
        const std::int64_t a0 = gq * n / all_runs;
        if (r >= (gq + 1) * n / all_runs - a0)
            continue;
        float v = 0.f;
        for (int sl = 0; sl < slices; ++sl)
            v += part[(q * slices + sl) * max_rows + r];
        const std::int64_t row = a0 + r;
        const bool fetched = prefetch && i == static_cast<int>(threadIdx.x);
        if constexpr (F::scaled)
            v = fmaf(v, in.scale_of(row, fetched), bias ? in.bias_of(row, fetched) : 0.f);
        else if (bias)
            v += in.bias_of(row, fetched); // (gemv_claim's write_rows: no bias, no add)
        y[row] = element<X>::from_float(v);
    }
}

} // namespace fourfold::kernels::gemv_common
