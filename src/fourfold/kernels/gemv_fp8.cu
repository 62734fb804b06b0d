// FP8 weight-only GEMV kernels (see gemv_fp8.hpp).
//
// Lane l of a warp reads 16-byte vectors l, l + 32, ... of its slice of each of its R rows (16
// e4m3 values each), so one load instruction of a warp covers 512 contiguous bytes of a row. A
// vector is converted two values at a time (cvt.rn.f16x2.e4m3x2 from sm_89: exact, e4m3 being a
// subset of fp16) and widened to fp32; the 16 matching bf16 values of each token's x (two
// 16-byte loads through L1, shared by the R rows) are widened by a shift. Sums are fp32; the
// row's scale, then the bias, are applied once to the reduced sum before the one rounding to
// bf16.
#include "fourfold/kernels/elements.cuh"
#include "fourfold/kernels/gemv_fp8.hpp"
#include "fourfold/kernels/reduce.cuh"

#include <cuda_fp8.h>

namespace fourfold::kernels {
namespace {

using namespace device;
using bf16 = __nv_bfloat16;

// Two e4m3 values (the low and high byte of `pair`) as two floats, exactly.
__device__ __forceinline__ float2 e4m3x2_to_float2(unsigned short pair) {
    const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(pair, __NV_E4M3);
    return __half22float2(__half2(h));
}

// 8 e4m3 values (two 32-bit words of a 16-byte vector) as floats.
__device__ __forceinline__ void unpack_e4m3(unsigned w0, unsigned w1, float (&f)[8]) {
    const unsigned words[2] = {w0, w1};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const float2 lo = e4m3x2_to_float2(static_cast<unsigned short>(words[i] & 0xffffu));
        const float2 hi = e4m3x2_to_float2(static_cast<unsigned short>(words[i] >> 16));
        f[4 * i] = lo.x;
        f[4 * i + 1] = lo.y;
        f[4 * i + 2] = hi.x;
        f[4 * i + 3] = hi.y;
    }
}

// 8 bf16 values of one 16-byte vector as floats: a bf16 is the high half of its float.
__device__ __forceinline__ void unpack_bf16(const uint4& v, float* f) {
    const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        f[2 * i] = __uint_as_float(words[i] << 16);
        f[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
    }
}

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
    std::int64_t g = static_cast<std::int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
    if (g >= groups)
        return;
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
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int groups = 8 / ks, group = warp / ks, ks_index = warp % ks;
    const std::int64_t kbeg = ks_index * kchunk;
    const std::int64_t kend = kbeg + kchunk < nkv ? kbeg + kchunk : nkv;
    const uint4* xv[TOK];
#pragma unroll
    for (int t = 0; t < TOK; ++t)
        xv[t] = reinterpret_cast<const uint4*>(x + t * ld_x);
    const std::int64_t row0 =
        (static_cast<std::int64_t>(blockIdx.x) * groups + group) * static_cast<std::int64_t>(R);
    const uint4* wr[R];
    bool row_ok[R];
#pragma unroll
    for (int r = 0; r < R; ++r) {
        row_ok[r] = row0 + r < n;
        wr[r] = reinterpret_cast<const uint4*>(w + (row_ok[r] ? row0 + r : 0) * ld_w);
    }
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
    const auto grid = static_cast<unsigned>(p.blocks);
    if (p.k_split == 1) {
        gemv_fp8_stream<TOK, R><<<grid, p.threads, 0, stream>>>(t.x, t.w, a.scale, a.inc_scale,
                                                                t.per_row, t.bias, t.y, a.n, nkv,
                                                                a.ld_x, a.ld_w, a.ld_y);
    } else {
        const std::int64_t kchunk = (nkv + p.k_split - 1) / p.k_split;
        gemv_fp8_split<TOK, R>
            <<<grid, p.threads, 0, stream>>>(t.x, t.w, a.scale, a.inc_scale, t.per_row, t.bias, t.y,
                                             a.n, nkv, a.ld_x, a.ld_w, a.ld_y, p.k_split, kchunk);
    }
    return status_of(cudaGetLastError());
}

// One token: R by the row's length (plan_gemv_fp8); from two tokens on, R = 2.
template <int TOK>
launch_status launch_tokens(const gemv_fp8_plan& p, const gemv_fp8_args& a, stream_t stream) {
    if constexpr (TOK == 1) {
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
        gemv_fp8_scalar<<<static_cast<unsigned>(p.blocks), p.threads, 0, stream>>>(
            t.x, t.w, a.scale, a.inc_scale, t.per_row, t.bias, t.y, static_cast<int>(a.tokens), a.n,
            a.k, a.ld_x, a.ld_w, a.ld_y, a.inc_x, a.inc_w, p.k_split, kchunk, p.row_blocks);
        return status_of(cudaGetLastError());
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
