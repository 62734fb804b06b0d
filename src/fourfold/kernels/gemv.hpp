#pragma once
// Decode GEMV: y (T x N) = x (T x K) W^T (+ b), W N x K, T = 1..8 tokens, fp32 accumulation,
// output in the input dtype. Bandwidth-bound: each weight element is read exactly once per call,
// in 16-byte loads coalesced across a warp; a warp takes R rows, and where N is too small to
// give every SM enough rows, the warps of one block split K between them (split-K reduced in
// shared memory, so no workspace and no second launch). Inputs whose rows are not 16-byte
// aligned (K not a multiple of the vector width, a view at an odd offset) take a scalar path
// that the plan names.
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

inline constexpr int k_gemv_max_tokens = 8;
// the x of a fused RMSNorm or SwiGLU (and the claimed and column-stationary kernels' sums), in a
// block's dynamic shared memory without the opt-in: the 48 KiB a launch may take by default hold
// the kernels' static arrays too (at most 704 bytes: gemv_balanced's head and tail sums, the
// norm's scratch, the claim counter), so the dynamic part stops 1 KiB short. (At exactly 48 KiB
// of dynamic memory a launch fails, invalid argument: session 40's staged-x trial, K = 12,288.)
inline constexpr std::int64_t k_gemv_norm_max_shared_bytes = std::int64_t{47} * 1024;
// Resident blocks per SM the kernels are compiled for (__launch_bounds__); the plan sizes its
// split so the grid fills whole waves of them.
// (FMA path: 4 for one token, whose kernels fit 64 registers, 2 beyond)
constexpr int gemv_fma_blocks_per_sm(int tokens) {
    return tokens <= 1 ? 4 : 2;
}
inline constexpr int k_gemv_mma_blocks_per_sm = 3;
// 2..8 tokens take the tensor cores in rounds (gemv_mma_rounds) from this many bytes of weights
// on, gemv_mma below (measured: gemv_plan.cpp).
inline constexpr std::int64_t k_gemv_mma_rounds_min_bytes = std::int64_t{64} << 20;
// gemv_mma_rounds: the split of a 16-row tile's K over ks warps (1..8) that keeps the most warps
// busy with the same number of tiles a block and every block resident (blocks of ks warps under
// gemv_mma's register bound: (8 x k_gemv_mma_blocks_per_sm) / ks of them an SM, at most 32).
struct gemv_mma_rounds_shape {
    int ks = 1;
    std::int64_t rounds = 0, blocks = 0;
};
gemv_mma_rounds_shape gemv_mma_rounds_shape_of(std::int64_t n, std::int64_t k, int sm_count);
// gemv_claim (gemv_plan::claimed): one block of this many threads an SM
inline constexpr int k_gemv_claim_threads = 1024;
// The column-stationary kernel (gemv_cs.cuh, one token; the FP8 GEMV's and the bf16 / fp16 one's):
// a block of 16 warps an SM, a warp a slice of k_gemv_cs_vectors 16-byte weight vectors a lane
// (1 KB of a row), k_gemv_cs_depth rows of it in flight; K up to 16 slices.
inline constexpr int k_gemv_cs_threads = 512;
inline constexpr int k_gemv_cs_vectors = 2;
inline constexpr int k_gemv_cs_depth = 4;
// The column-stationary kernel's partition (both GEMV plans): n rows of nkv 16-byte weight vectors
// over sm_count blocks of 16 warps, or (`half`) 2 sm_count blocks of 8. `slices` of K a row, the
// rows of the longest run, and the bytes of the float a row of each warp's run a block sums in
// shared memory; run_rows 0 where K has more slices than a block has warps (the kernel does not
// take it).
struct gemv_cs_shape {
    std::int64_t slices = 0, run_rows = 0, sum_bytes = 0;
    std::int64_t runs = 0; // the grid's runs (0 where K has more slices than a block has warps)
    std::int64_t blocks = 0;
    int threads = k_gemv_cs_threads;
};
gemv_cs_shape gemv_cs_shape_of(std::int64_t n, std::int64_t nkv, int sm_count, bool half = false);
// The shape both plans take: two blocks an SM where cs_half_wanted (below) says so.
gemv_cs_shape gemv_cs_shape_planned(std::int64_t n, std::int64_t nkv, int sm_count);
// The trial FOURFOLD_GEMV_CS_HALF=1 (session 48, both plans): the column-stationary kernel in two
// blocks of 8 warps an SM where a row's slices divide 8 (the same runs, so the same rows a warp
// and the same bits), so that a block of it can start on an SM where one of the launch before's
// blocks still runs: a block of 16 warps at 128 registers takes an SM's whole register file, and
// waits for every block there to leave (session 47: column-stationary gained half what the static
// partition, 4 blocks an SM, gained from the dependent launch behind qwen3's MoE block).
bool cs_half_wanted(std::int64_t slices);
// The rows of each warp's slice gemv_cs asks L2 for before its dependency wait: the ring's
// k_gemv_cs_depth (both plans). FOURFOLD_GEMV_CS_L2_RUN=0: none. Measured on an H100 (session 50,
// one call): none costs llama3-8b bf16 1.2 % at ctx 512 and is neutral on qwen3-30b-a3b; session
// 48's trial of asking for the whole run (up to 24 MB over the grid, =1) lost 0.3-3.7 % on qwen3
// and llama3-8b fp8 and was removed.
int cs_l2_rows(const gemv_cs_shape& s);
// The column-stationary and claimed epilogues' bias and scale, copied into shared memory by
// cp.async at the start (a 4-byte word of each for every thread's first epilogue row): the
// epilogue then reads them there, where it loaded them after its block barrier, one round trip of
// L2 in series at the kernel's end (the SASS, session 42). Measured on the H200 (session 43):
// llama3-8b fp8 386.6 -> 392.4 tokens/s at ctx 512 (368.5 -> 374.9 at 2048), the FP8 GEMVs
// 0.1-0.2 µs a call faster; the bf16 GEMVs with a bias within noise. Both plans take it where
// the kernel has a bias or a scale and the bytes fit, unless FOURFOLD_GEMV_EPILOGUE_PREFETCH=0
// (A/B runs); the same bits either way.
inline constexpr std::int64_t k_gemv_cs_epilogue_bytes = std::int64_t{2} * k_gemv_cs_threads * 4;
// the same for gemv_claim (one word of each a thread of its k_gemv_claim_threads)
inline constexpr std::int64_t k_gemv_claim_epilogue_bytes =
    std::int64_t{2} * k_gemv_claim_threads * 4;
// Whether a plan takes it: where `wanted` (a bias or a scale to fetch), `bytes` fit beside
// `shared_bytes` in 47 KiB and FOURFOLD_GEMV_EPILOGUE_PREFETCH is not 0; shared_bytes then grows
// by them.
bool take_epilogue_prefetch(std::int64_t& shared_bytes, std::int64_t bytes, bool wanted);
// gemv_cs's cs_fetch_first for a plan with the norm fused or not (FOURFOLD_GEMV_CS_FETCH_FIRST=0:
// never), for the bf16 and the FP8 plans alike
bool cs_fetch_first(bool fused_norm);

struct gemv_args {
    const void* x = nullptr;    // T x K
    const void* w = nullptr;    // N x K
    const void* bias = nullptr; // N, or nullptr
    void* y = nullptr;          // T x N
    std::int64_t tokens = 1, n = 0, k = 0;
    std::int64_t ld_x = 0, ld_w = 0, ld_y = 0; // row strides in elements
    std::int64_t inc_x = 1, inc_w = 1; // element strides along K (the scalar path takes any)
    elem type = elem::bf16;
    // RMSNorm fused in front (K elements, or nullptr): x holds the un-normalised rows and the
    // GEMV multiplies round(x / rms(x) * norm_weight) by W, the value kernels/rmsnorm.cu writes
    // (rms over each token's K, + norm_eps inside the root), kept in shared memory (T x K
    // elements, at most 48 KiB). The balanced path only: where the plan takes another, or the
    // rows do not fit, it refuses (`valid`), and the caller runs the norm on its own.
    const void* norm_weight = nullptr;
    double norm_eps = 1e-6;
    // SwiGLU fused in front: x holds [gate | up] rows of 2K elements (ld_x >= 2K) and the GEMV
    // multiplies round(silu(gate) * up), the value kernels/swiglu.cu writes, kept in shared
    // memory like the norm's (the balanced path only; not with norm_weight).
    bool swiglu_x = false;
};

struct gemv_plan {
    bool vectorised = true;
    bool tensor_cores = false; // 2..8 tokens, bf16/fp16: m16n8k16 MMAs, 16-row tiles
    // tensor cores in rounds (weights of k_gemv_mma_rounds_min_bytes or more; session 46): blocks
    // of k_split warps (1..8), one 16-row tile a round, each block the same number of rounds
    // (this many), every block resident at once; shared_bytes holds the split's sums. 0: one
    // tile group a block (gemv_mma).
    int mma_rounds = 0;
    // unsplit K on the FMA path: each warp streams its row groups back to back with the next
    // group's loads in flight (gemv_stream)
    bool streamed = false;
    bool persistent = false; // streamed over one wave of blocks (8 or more row groups a warp)
    // one wave of blocks, each a contiguous run of rows whose 2 KB steps are cut into 8 equal
    // runs, one a warp; rows cut between runs are summed in shared memory (gemv_balanced)
    bool balanced = false;
    // balanced, one token: one block of k_gemv_claim_threads an SM whose warps claim the block's
    // 2 KB steps from a shared counter (gemv_claim); shared_bytes then holds a float a step too
    bool claimed = false;
    // one token, bf16 or fp16, rows of 8 KB or more (FOURFOLD_GEMV_CS=0: never, =1: any rows),
    // K at most 16 slices of 1 KB (512 elements; session 43): gemv_cs (gemv_cs.cuh), the FP8
    // GEMV's column-stationary kernel over these weights: one block of k_gemv_cs_threads an SM,
    // a warp one slice of K (its x as floats in registers) down a run of at most `slice_rows`
    // rows, `slices` warps a run; shared_bytes holds the prologue's x (none for the SwiGLU, made
    // by each warp for its slice), then a float a row of each warp's run
    bool column_stationary = false;
    int slices = 0;
    int slice_rows = 0;
    bool swiglu_slices = false;
    // column-stationary with the norm fused: the first rows' weights loaded before the prologue
    // (gemv_cs.cuh; session 47 on an H100: 4096 x 2048 + norm 8.41 -> 7.59 µs, llama3-8b fp8
    // 308.9 -> 310.8 tokens/s, K = 4096 bf16 unchanged; FOURFOLD_GEMV_CS_FETCH_FIRST=0: after it)
    bool cs_fetch_first = false;
    // column-stationary: the rows of each warp's slice asked of L2 before the wait (cs_l2_rows)
    int cs_l2_rows = 0;
    // column-stationary or claimed, with a bias: the epilogue's bias fetched at the start
    // (k_gemv_cs_epilogue_bytes / k_gemv_claim_epilogue_bytes above, in shared_bytes last)
    bool epilogue_prefetch = false;
    // a programmatic dependent launch (compute capability 9 or more): the kernel may start
    // while the one before it on the stream finishes, its first weights prefetched into L2,
    // and waits for it before reading x (kernels/elements.cuh)
    bool dependent_launch = false;
    bool fused_norm = false;       // gemv_args::norm_weight applied inside (gemv_balanced)
    bool fused_swiglu = false;     // gemv_args::swiglu_x applied inside (gemv_balanced)
    std::int64_t shared_bytes = 0; // dynamic shared memory a block takes (the prologue's x)
    int threads = 256;
    int rows_per_warp = 1; // R: 1, or 2 / 4 for rows under 2048 / 1024 bytes (streamed); 16
                           // on the tensor-core path (one tile)
    int k_split = 1;       // warps of a block sharing one row group's K
    int unroll = 8;        // 16-byte loads a lane has in flight per row
    std::int64_t blocks = 0;
    std::string why_scalar;
    std::string valid; // empty when the plan can run; else what is wrong with the arguments
    std::string describe() const;
};

gemv_plan plan_gemv(const gemv_args& a, const device_limits& d);
launch_status launch_gemv(const gemv_plan& p, const gemv_args& a, stream_t stream);

} // namespace fourfold::kernels
