#pragma once
// FP8 weight-only decode GEMV: y (T x N, bf16) = x (T x K, bf16) (s . W)^T (+ b), W N x K stored
// as float8 e4m3 (e4m3fn: no infinities, 448 the largest finite value) with one float32 scale for
// the whole tensor or one per row (output feature), T = 1..8 tokens, fp32 accumulation. The
// scale multiplies each row's fp32 sum once, before the bias and the one rounding to bf16, so
// the result is the product with the dequantised weights s * W rounded once.
//
// Bandwidth-bound like the bf16 GEMV (gemv.hpp) with half its weight bytes: each weight byte
// is read exactly once per call, in 16-byte loads (16 e4m3 values) coalesced across a warp; a
// warp takes R rows sharing the x values it loads (R = 4 from 2 tokens on, where x's loads and
// conversions would otherwise cost more than the weights' own), and where N is too small to give
// every SM enough rows the warps of a block split K between them (reduced in shared memory: no
// workspace, no second launch). Inputs whose rows are not 16-byte aligned (K not a multiple of
// 16, a view at an odd offset, a stride along K) take a scalar path that the plan names. One
// token from 4 rows a block of the wave on, with rows of 2 KB or more and K of at most 16 KB,
// takes the column-stationary kernel: a warp holds one 1 KB slice of x as floats in registers
// down a run of rows, so x is neither loaded nor widened per weight (with an RMSNorm or a SwiGLU
// fused in front, made once a block in shared memory first). Wider K takes the bf16 GEMV's
// balanced split: each block of one wave a contiguous run of rows, its warps equal runs of their
// 2 KB steps; with a prologue, the steps are claimed at run time by the warps of one 1024-thread
// block an SM instead (gemv_claim, the bf16 GEMV's kernel over e4m3 weights), which makes x in
// shared memory once an SM. From sm_90 every path is a programmatic dependent launch.
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/kernel_api.hpp"

#include <optional>
#include <string>

namespace fourfold::kernels {

inline constexpr int k_gemv_fp8_max_tokens = 8;
// Resident blocks per SM the vector kernels are compiled for (__launch_bounds__): 4 (64
// registers) for one token, 2 beyond (R = 4 rows of up to 8 tokens' accumulators).
constexpr int gemv_fp8_blocks_per_sm(int tokens) {
    return tokens <= 1 ? 4 : 2;
}

enum class fp8_scaling { per_tensor, per_row };
const char* to_string(fp8_scaling s);

struct gemv_fp8_args {
    const void* x = nullptr;      // T x K, bf16
    const void* w = nullptr;      // N x K, e4m3 bytes
    const float* scale = nullptr; // on the device: 1 float (per tensor) or N (per row)
    const void* bias = nullptr;   // N, bf16, or nullptr
    void* y = nullptr;            // T x N, bf16
    std::int64_t tokens = 1, n = 0, k = 0;
    std::int64_t ld_x = 0, ld_w = 0, ld_y = 0; // row strides in elements (W's are bytes)
    std::int64_t inc_x = 1, inc_w = 1; // element strides along K (the scalar path takes any)
    std::int64_t inc_scale =
        1; // per row: the stride between rows' scales (a (1, N) or (N, 1) view)
    fp8_scaling scaling = fp8_scaling::per_tensor;
    // The bf16 GEMV's prologues (gemv_args), on the claimed path only (one token; the plan
    // refuses them elsewhere, and the caller then runs the norm or the SwiGLU on its own):
    // RMSNorm(x) with this bf16 weight [K] and eps, or x as [gate | up] rows of 2K (ld_x >= 2K)
    // and their SwiGLU, made once a block in shared memory with kernels/rmsnorm.cu's and
    // kernels/swiglu.cu's value and rounding.
    const void* norm_weight = nullptr;
    double norm_eps = 1e-6;
    bool swiglu_x = false;
};

struct gemv_fp8_plan {
    bool vectorised = true;
    // one token: one wave of blocks, each a contiguous run of rows whose 2 KB steps are cut
    // into 8 equal runs, one a warp; rows cut between runs summed in shared memory
    bool balanced = false;
    // balanced with a prologue, one token: one block of k_gemv_claim_threads an SM whose warps
    // claim the block's 2 KB steps from a shared counter (gemv_claim.cuh, shared with the bf16
    // GEMV); shared_bytes holds the prologue's x, then a float a step
    bool claimed = false;
    // one token where K is at most 16 slices of 1 KB (session 40), in place of balanced or
    // claimed: a block of k_gemv_cs_threads (gemv.hpp) an SM whose warps each hold one 1 KB slice
    // of K's x in registers down a run of rows (gemv_cs.cuh's gemv_cs); `slices` warps a run, rows
    // of a run at most `slice_rows`; shared_bytes holds the prologue's x, then a float a row of
    // each warp's run
    bool column_stationary = false;
    int slices = 0;
    int slice_rows = 0;
    // a fused SwiGLU made by each warp for its own slice from global memory instead of once a
    // block in shared memory (shared_bytes then holds no x; the same bits): the column-stationary
    // default, FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0 turns it off (A/B runs)
    bool swiglu_slices = false;
    // column-stationary with the norm fused: the first rows' weights loaded before the prologue
    // (gemv_cs.cuh; session 47 on an H100: 4096 x 2048 + norm 8.41 -> 7.59 µs, llama3-8b fp8
    // 308.9 -> 310.8 tokens/s, K = 4096 bf16 unchanged; FOURFOLD_GEMV_CS_FETCH_FIRST=0: after it)
    bool cs_fetch_first = false;
    // column-stationary: the rows of each warp's slice asked of L2 before the wait (gemv.hpp's
    // cs_l2_rows)
    int cs_l2_rows = 0;
    // column-stationary or claimed: the epilogue's scale and bias fetched at the start (gemv.hpp's
    // k_gemv_cs_epilogue_bytes / k_gemv_claim_epilogue_bytes, in shared_bytes last)
    bool epilogue_prefetch = false;
    bool fused_norm = false;       // gemv_fp8_args::norm_weight applied inside (claimed)
    bool fused_swiglu = false;     // gemv_fp8_args::swiglu_x applied inside (claimed)
    std::int64_t shared_bytes = 0; // dynamic shared memory a block takes
    // a programmatic dependent launch (compute capability 9 or more): the kernel may start
    // while the one before it on the stream finishes, its first weights prefetched into L2,
    // and waits for it before it reads x, the scale or the bias (kernels/elements.cuh)
    bool dependent_launch = false;
    int threads = 256;
    int rows_per_warp = 1; // R: 1, 2 or 4
    int k_split = 1;       // warps of a block sharing one row group's K
    int unroll = 4;        // 16-byte loads of each row a lane has in flight (x 2: double-buffered)
    std::int64_t blocks = 0;
    // row blocks of (8 / k_split) row groups, blocks <= row_blocks; balanced: the blocks' runs
    std::int64_t row_blocks = 0;
    std::string why_scalar;
    std::string valid; // empty when the plan can run; else what is wrong with the arguments
    std::string describe() const;
};

gemv_fp8_plan plan_gemv_fp8(const gemv_fp8_args& a, const device_limits& d);
launch_status launch_gemv_fp8(const gemv_fp8_plan& p, const gemv_fp8_args& a, stream_t stream);

// Why the FP8 GEMV cannot run on CUDA device `index`: the build holds no code for it
// (CMAKE_CUDA_ARCHITECTURES has no image or PTX that runs there); nullopt when it can. A host
// query (cudaFuncGetAttributes), no synchronisation.
std::optional<std::string> gemv_fp8_unavailable(int index);
// The architecture of the code that runs there (major * 10 + minor; 0 if none). From 89 the
// e4m3 values are converted by cvt.rn.f16x2.e4m3x2, two an instruction; below, cuda_fp8.h
// emulates it in integer arithmetic.
int gemv_fp8_code_version(int index);

} // namespace fourfold::kernels
