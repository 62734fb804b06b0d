#pragma once
// Device code the one-token GEMVs share (kernels/gemv.cu over bf16, fp16 and fp32 weights,
// kernels/gemv_fp8.cu over e4m3 weights): the prologues that make the x a GEMV multiplies in a
// block's shared memory, and gemv_claim, whose warps claim a block's 2 KB weight steps at run time.
// A weight format is a type with
//   X (the element type of x, the bias, the norm weight and y), W (a weight's storage),
//   x_vectors (16-byte vectors of x a 16-byte vector of weights multiplies), scaled (a float
//   scale, per tensor or per row, multiplies each row's sum before the bias), and
//   dot<SHARED>(acc, wv, xv, v): acc + the weight vector wv times the x that weight vector v of a
//   row multiplies (xv: x's 16-byte vectors, in shared memory when SHARED), fp32, in a fixed order.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/reduce.cuh"

namespace fourfold::kernels::gemv_common {

using namespace device;

// PRO, a prologue that makes the x the steps read, once per block, in shared memory (T x K
// elements, the launch's dynamic shared memory), read there as x is read otherwise:
// k_pro_norm: x holds un-normalised rows (the residual stream) and the GEMV multiplies RMSNorm(x)
// by W: every block first sums each token's squares over K (a fixed thread order and reduction
// tree, so every block derives the same 1 / rms), then writes round_T(x * inv * norm_weight), the
// value and the one rounding kernels/rmsnorm.cu writes, to shared memory (T x K elements, the
// launch's dynamic shared memory), where the steps read it as they read x otherwise: the norm's
// launch, its write and the GEMV's read of it go. (Normalising each x element again for every row,
// the first version, cost 5-80 µs a call: ALU work per weight element, H200, build a9a4870.)
// k_pro_swiglu: x holds [gate | up] rows of 2K elements and the GEMV multiplies
// round_T(silu(gate) * up), kernels/swiglu.cu's value and rounding: the SwiGLU's launch goes.
constexpr int k_pro_none = 0, k_pro_norm = 1, k_pro_swiglu = 2;

// The prologues' x in shared memory (PRO below): every thread of the block takes its share,
// `xv` then points at `normed`; the caller syncs the block before the steps read it.
template <typename T, int TOK>
__device__ __forceinline__ void prologue_swiglu(const uint4* (&xv)[TOK], uint4* normed, int kv) {
    constexpr int VEC = 16 / sizeof(T);
    using P = packet<T, VEC>;
    // B vectors of gate and of up a thread in flight before the first is used: one L2 round
    // trip a batch, where the loop a vector at a time paid one a vector (K = 14,336: 7 a
    // thread, +4.4 µs over no prologue, ba3b4f3)
    constexpr int B = 3;
#pragma unroll
    for (int t = 0; t < TOK; ++t) {
        for (int v0 = threadIdx.x; v0 < kv; v0 += B * blockDim.x) {
            uint4 gq[B], uq[B];
#pragma unroll
            for (int b = 0; b < B; ++b) {
                const int v = v0 + b * static_cast<int>(blockDim.x);
                if (v < kv) {
                    gq[b] = __ldg(xv[t] + v);
                    uq[b] = __ldg(xv[t] + kv + v);
                }
            }
#pragma unroll
            for (int b = 0; b < B; ++b) {
                const int v = v0 + b * static_cast<int>(blockDim.x);
                if (v < kv) {
                    float g[VEC], up[VEC];
                    P::unpack(gq[b], g);
                    P::unpack(uq[b], up);
#pragma unroll
                    for (int j = 0; j < VEC; ++j)
                        g[j] = silu(g[j]) * up[j];
                    normed[t * kv + v] = P::pack(g);
                }
            }
        }
        xv[t] = normed + t * kv;
    }
}

template <typename T, int TOK>
__device__ __forceinline__ void prologue_norm(const uint4* (&xv)[TOK], uint4* normed, int kv,
                                              const T* __restrict__ norm_weight, float norm_eps) {
    constexpr int VEC = 16 / sizeof(T);
    using P = packet<T, VEC>;
    __shared__ float scratch[32];
    const uint4* nv = reinterpret_cast<const uint4*>(norm_weight);
    const int first = static_cast<int>(threadIdx.x), step = static_cast<int>(blockDim.x);
    const bool own = first < kv;
    const uint4 zero = make_uint4(0, 0, 0, 0);
    // the thread's first vector of the norm's weights, asked for with x's: its round trip (from
    // DRAM: a step reads each layer's norm once) overlaps x's and the block sum, not after them
    const uint4 nw0 = own ? __ldg(nv + first) : zero;
    auto sum_squares = [&](const uint4 q, float ss) {
        float xf[VEC];
        P::unpack(q, xf);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            ss = fmaf(xf[j], xf[j], ss);
        return ss;
    };
#pragma unroll
    for (int t = 0; t < TOK; ++t) {
        // the first vector held in registers from the sum to the scaling (the same order of
        // vectors, so the same sum: a zero vector adds +0 to +0)
        const uint4 x0 = own ? __ldg(xv[t] + first) : zero;
        float ss = sum_squares(x0, 0.f);
        for (int v = first + step; v < kv; v += step)
            ss = sum_squares(__ldg(xv[t] + v), ss);
        ss = block_sum(ss, scratch);
        const float inv = rsqrtf(ss / static_cast<float>(kv * VEC) + norm_eps);
        if (own)
            normed[t * kv + first] = rms_scaled<T>(x0, nw0, inv);
        for (int v = first + step; v < kv; v += step)
            normed[t * kv + v] = rms_scaled<T>(__ldg(xv[t] + v), __ldg(nv + v), inv);
        xv[t] = normed + t * kv;
    }
}

// Weights stored as x is (bf16, fp16 or fp32): a weight vector multiplies one x vector.
template <typename T> struct same_weights {
    using X = T;
    using W = T;
    static constexpr int x_vectors = 1;
    static constexpr bool scaled = false;
    template <bool SHARED>
    __device__ static __forceinline__ float dot(float acc, const uint4& wv,
                                                const uint4* __restrict__ xv, int v) {
        constexpr int VEC = 16 / sizeof(T);
        using P = packet<T, VEC>;
        float wf[VEC], xf[VEC];
        P::unpack(wv, wf);
        if constexpr (SHARED) {
            // one 16-byte shared load into a register, then unpacked (unpacking the shared word
            // in place compiled to eight 2-byte loads: 35-43 % slower on the H200, d6264c7)
            const uint4 r = xv[v];
            P::unpack(r, xf);
        } else
            P::unpack(__ldg(xv + v), xf);
#pragma unroll
        for (int j = 0; j < VEC; ++j)
            acc = fmaf(wf[j], xf[j], acc);
        return acc;
    }
    // gemv_cs (gemv_cs.cuh): x held as floats in registers
    static constexpr int x_floats = 16 / sizeof(T);
    __device__ static __forceinline__ void unpack_x(const uint4& r, float* f) {
        float t[x_floats];
        packet<T, x_floats>::unpack(r, t);
#pragma unroll
        for (int j = 0; j < x_floats; ++j)
            f[j] = t[j];
    }
    __device__ static __forceinline__ float dot_regs(float acc, const uint4& wv,
                                                     const float (&xf)[x_floats]) {
        float wf[x_floats];
        packet<T, x_floats>::unpack(wv, wf);
#pragma unroll
        for (int j = 0; j < x_floats; ++j)
            acc = fmaf(wf[j], xf[j], acc);
        return acc;
    }
};

// The epilogue's bias and scale of one row fetched early (gemv.hpp's k_gemv_cs_epilogue_bytes):
// into pre[t] the aligned 4-byte word that holds bias[row] (a 2-byte element's half past the
// bias's end not read), into pre[threads + t] the row's scale; no register held until the
// epilogue reads them.
template <typename F>
__device__ __forceinline__ void
fetch_epilogue(unsigned* pre, int threads, std::int64_t row, std::int64_t n, const float* scale,
               std::int64_t inc_scale, bool per_row, const typename F::X* bias) {
    static_assert(sizeof(typename F::X) == 2 || sizeof(typename F::X) == 4, "2- or 4-byte bias");
    if (bias && sizeof(typename F::X) == 4) {
        copy_async_4(pre + threadIdx.x, bias + row, 4);
    } else if (bias) {
        const auto at = reinterpret_cast<std::uintptr_t>(bias + row);
        const auto word = at & ~std::uintptr_t{3};
        const auto end = reinterpret_cast<std::uintptr_t>(bias + n);
        copy_async_4(pre + threadIdx.x, reinterpret_cast<const void*>(word),
                     word + 4 <= end ? 4 : 2);
    }
    if constexpr (F::scaled)
        copy_async_4(pre + threads + threadIdx.x, per_row ? scale + row * inc_scale : scale, 4);
}

// A row's scale (scaled formats) and bias for the epilogue: from fetch_epilogue's words where
// `fetched` (the thread's own), else from global memory.
template <typename F> struct epilogue_inputs {
    const unsigned* pre;
    int threads;
    const float* scale;
    std::int64_t inc_scale;
    bool per_row;
    const typename F::X* bias;
    __device__ float scale_of(std::int64_t row, bool fetched) const {
        if (fetched)
            return __uint_as_float(pre[threads + threadIdx.x]);
        return per_row ? scale[row * inc_scale] : scale[0];
    }
    __device__ float bias_of(std::int64_t row, bool fetched) const {
        using X = typename F::X;
        if (!fetched)
            return element<X>::to_float(bias[row]);
        const auto half =
            sizeof(X) == 2 ? (reinterpret_cast<std::uintptr_t>(bias + row) >> 1) & 1 : 0;
        return element<X>::to_float(reinterpret_cast<const X*>(pre + threadIdx.x)[half]);
    }
};

// After the block's barrier: each row's step slots added in step order (deterministic), times its
// scale for a scaled format, plus its bias, rounded once and written (gemv_claim's epilogue); the
// thread's first row's scale and bias from fetch_epilogue where `prefetched`.
template <typename F>
__device__ __forceinline__ void write_rows(const float* sums, int rows, int steps, std::int64_t r0,
                                           const epilogue_inputs<F>& in, bool prefetched,
                                           typename F::X* __restrict__ y) {
    using X = typename F::X;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        float v = 0.f;
        for (int s = 0; s < steps; ++s)
            v += sums[r * steps + s];
        const bool fetched = prefetched && r == static_cast<int>(threadIdx.x);
        if constexpr (F::scaled) {
            v = fmaf(v, in.scale_of(r0 + r, fetched), in.bias ? in.bias_of(r0 + r, fetched) : 0.f);
        } else if (in.bias)
            v += in.bias_of(r0 + r, fetched);
        y[r0 + r] = element<X>::from_float(v);
    }
}

// One token, one block of 32 warps an SM, its 2 KB steps claimed at run time (gemv_plan::claimed,
// gemv_fp8_plan::claimed). Block b takes the rows [b N / B, (b + 1) N / B) as gemv_balanced's
// blocks do, laid end to end as steps (U = 4 weight vectors a lane); warp w's first step is w,
// each later one comes from a shared counter (one atomicAdd, a step ahead of the loads it names,
// so its round trip hides under the multiply). A step's sum over its lanes goes to a shared slot
// of its own, and after one block barrier each row's slots are added in step order
// (deterministic, whichever warp took a step) and the row is written: its sum (times its scale,
// for a scaled format) plus its bias, rounded once. Why: the warps of a static partition do not
// finish together (session 25's probe, gemv_balanced: ends spread over 1-17 µs within one SM,
// which SMs are slow changing from shape to shape); warps that claim steps end within about a
// step of each other. The prologue runs once an SM, not four times.
// nkv: a row's 16-byte weight vectors; ld_w: W's row stride in W elements; scale (scaled formats):
// one float, or one a row `inc_scale` apart when per_row.
template <typename F, int PRO>
__global__ void __launch_bounds__(k_gemv_claim_threads, 1)
    gemv_claim(const typename F::X* __restrict__ x, const typename F::W* __restrict__ w,
               const typename F::X* __restrict__ bias, typename F::X* __restrict__ y,
               std::int64_t n, std::int64_t nkv, std::int64_t ld_w,
               const typename F::X* __restrict__ norm_weight, float norm_eps,
               const float* __restrict__ scale, std::int64_t inc_scale, bool per_row,
               bool prefetch) {
    using X = typename F::X;
    constexpr int WVEC = 16 / sizeof(typename F::W);
    constexpr int U = 4;
    constexpr int warps = k_gemv_claim_threads / 32;
    __shared__ int claimed;
    extern __shared__ uint4 smem[]; // PRO: the x the steps read (xkv vectors); then a float a step
    allow_dependents();
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const std::int64_t r0 = blockIdx.x * n / gridDim.x;
    const int rows = static_cast<int>((blockIdx.x + 1) * n / gridDim.x - r0);
    const int kv = static_cast<int>(nkv);           // the plan keeps n and k below 2^31
    const int xkv = kv * F::x_vectors;              // x's vectors
    const int steps = (kv + 32 * U - 1) / (32 * U); // a row's steps
    const int total = rows * steps;                 // the plan sizes the slots for it
    float* sums = reinterpret_cast<float*>(smem + (PRO != k_pro_none ? xkv : 0));
    const uint4* w0 = reinterpret_cast<const uint4*>(w + r0 * ld_w);
    const std::int64_t ldv = ld_w / WVEC;
    auto fetch = [&](uint4(&dst)[U], int i) {
        const int row = i / steps, s = i - row * steps;
        const uint4* wr = w0 + row * ldv;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            dst[u] = v < kv ? load_streaming(wr + v) : make_uint4(0, 0, 0, 0);
        }
    };
    auto claim = [&] {
        int c = 0;
        if (lane == 0)
            c = atomicAdd(&claimed, 1);
        return __shfl_sync(0xffffffffu, c, 0);
    };
    if (threadIdx.x == 0)
        claimed = warps;
    // the warp's first step into L2 while the kernel before may still run, then wait
    if (warp < total && lane % 8 == 0) {
        const int row = warp / steps, s = warp - row * steps;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            if (v < kv)
                prefetch_l2(w0 + row * ldv + v);
        }
    }
    dependency_wait();
    int i = warp;
    uint4 cur[U], nxt[U];
    // the first step into registers before the norm prologue (as gemv_balanced does)
    if (PRO != k_pro_swiglu && i < total)
        fetch(cur, i);
    const uint4* xv[1] = {reinterpret_cast<const uint4*>(x)};
    if constexpr (PRO == k_pro_swiglu) {
        prologue_swiglu<X, 1>(xv, smem, xkv);
        if (i < total)
            fetch(cur, i);
    }
    if constexpr (PRO == k_pro_norm)
        prologue_norm<X, 1>(xv, smem, xkv, norm_weight, norm_eps);
    // the epilogue's first row of this thread (row r0 + threadIdx.x): its bias and scale into
    // shared memory after the slots now (the plan's epilogue_prefetch), by cp.async
    auto* pre = reinterpret_cast<unsigned*>(sums + total);
    if (prefetch && static_cast<int>(threadIdx.x) < rows)
        fetch_epilogue<F>(pre, k_gemv_claim_threads, r0 + threadIdx.x, n, scale, inc_scale, per_row,
                          bias);
    __syncthreads(); // x in shared memory, the counter set
    int next = i < total ? claim() : total;
    while (i < total) {
        const bool more = next < total;
        if (more)
            fetch(nxt, next);
        const int after = more ? claim() : total;
        const int s = i % steps;
        float acc = 0.f;
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int v = s * 32 * U + u * 32 + lane;
            if (v >= kv)
                continue; // (the loads were zero alike)
            acc = F::template dot<PRO != k_pro_none>(acc, cur[u], xv[0], v);
        }
        acc = warp_sum(acc);
        if (lane == 0)
            sums[i] = acc;
#pragma unroll
        for (int u = 0; u < U; ++u)
            cur[u] = nxt[u];
        i = next;
        next = after;
    }
    if (prefetch)
        copy_async_wait_all(); // (each thread reads its own copies)
    __syncthreads();
    write_rows<F>(sums, rows, steps, r0,
                  epilogue_inputs<F>{pre, k_gemv_claim_threads, scale, inc_scale, per_row, bias},
                  prefetch, y);
}

} // namespace fourfold::kernels::gemv_common
