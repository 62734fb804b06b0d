#pragma once
// The MoE block at decode time (Qwen3-MoE's), on raw pointers and a stream. Where the device has
// the shared memory (sm_80 on: 2 x 106 KB an SM), in ONE launch on a persistent grid whose blocks
// are all resident:
//
//   route (every block, from the router logits), gate/up + SwiGLU (as kernel 1 below); then a
//   block takes a group of 8 output columns and each of its warps an active expert: the warp
//   copies that expert's 8 down rows (12 KB at most, cp.async) into shared memory BEFORE a grid
//   barrier, so the down weights stream while the last gate/up rows arrive; after the barrier
//   the intermediate is complete: the warp holds its expert's pairs' intermediate slice in
//   registers, dots it with the 8 staged rows, and the block adds its warps' weighted sums in
//   warp order in shared memory (warp w: active experts w, w + 8, ... in ascending id; a fixed
//   order, the same bits every run); y rounded once. Wider rows go in
//   pieces, further experts and groups are staged the same way after the barrier.
//   No second launch, no tail between two kernels, and a dependent launch behind the router.
//
// Elsewhere (or when the caller asks for it: moe_args::one_launch), in two kernels:
//
//   1. route + gate/up + SwiGLU. Every block of a persistent grid computes the routing from the
//      router logits itself (T <= 8 tokens x E <= 512 experts: softmax in fp32, top-k, the top-k
//      weights renormalised when norm_topk_prob) and groups the (token, slot) pairs by expert;
//      block 0 also writes that grouping to the workspace. A warp's unit of work is (active
//      expert, intermediate column j): it streams the expert's gate row j and up row W + j once
//      (16-byte loads), dots them with the rows of every token that chose the expert, and writes
//      silu(gate) * up of each of those (token, slot) pairs to the workspace's intermediate
//      [pairs, W] (in the input dtype, the one rounding the stock path also makes there).
//   2. down + the weighted combine. A warp's unit is an output column n of H: it reads row n of
//      every active expert's down matrix once, dots it with that expert's pairs' intermediate
//      rows and accumulates weight x dot per token in fp32 in a fixed order (experts in
//      ascending id, pairs in (token, slot) order, lanes in a fixed butterfly): deterministic,
//      no atomics; y is rounded once.
//
// So each selected expert's weights are read once per step however many tokens chose it. No
// host synchronisation and no allocation in a launch (the workspace is the caller's, sized by
// the plan): a step can be captured in a graph.
//
// Ties in the routing: of equal probabilities the lower expert index is taken first (at::topk
// makes no promise on ties; the moe_decode workload's logits have none).
//
// The grouped GEMV (moe_decode part=gate_up): y[r] = rows[r] W[e]^T for the rows of each expert's
// group, the groups given as int32 cumulative ends on the device (at::_grouped_mm's offsets);
// the same streaming as kernel 1, without the SwiGLU.
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

#ifdef __CUDACC__
#define FOURFOLD_HOST_DEVICE __host__ __device__
#else
#define FOURFOLD_HOST_DEVICE
#endif

namespace fourfold::kernels {

inline constexpr int k_moe_max_tokens = 8;
inline constexpr int k_moe_max_experts = 512; // 16 logits a lane in the routing warp
inline constexpr int k_moe_max_top_k = 32;    // one selected expert a lane
inline constexpr int k_moe_threads = 256;
inline constexpr int k_moe_blocks_per_sm = 2; // __launch_bounds__ of both kernels
inline constexpr std::int64_t k_moe_default_l2_prefetch = std::int64_t{32} << 20;
// The one launch's per-warp stage of down rows: 8 rows of 768 bf16 (Qwen3-30B-A3B's) at once,
// the rows of a block's group of output columns.
inline constexpr int k_moe_stage_bytes = 12 * 1024;
inline constexpr int k_moe_down_columns = 8;
// Its shared memory a block: the stages (dynamic) and, static, the routing (8 arrays of 256 ints
// or floats), the warps' partial sums (2 KB) and the 1 KB the runtime reserves a block.
inline constexpr std::int64_t k_moe_one_launch_dynamic_smem =
    std::int64_t{k_moe_stage_bytes} * (k_moe_threads / 32);
inline constexpr std::int64_t k_moe_one_launch_static_smem = 8 * 1024 + 16 + 2 * 1024 + 1024;

struct moe_args {
    const void* x = nullptr;         // T x H, row stride ld_x
    const void* logits = nullptr;    // T x E router logits, row stride ld_logits
    const void* w_gate_up = nullptr; // E x 2W x H, contiguous (gate rows first)
    const void* w_down = nullptr;    // E x H x W, contiguous
    void* y = nullptr;               // T x H, row stride ld_y
    void* workspace = nullptr;       // plan.workspace_bytes, 16-byte aligned
    std::int64_t tokens = 1, experts = 0, top_k = 1, hidden = 0, width = 0;
    std::int64_t ld_x = 0, ld_logits = 0, ld_y = 0;
    bool normalise = true;        // norm_topk_prob
    elem type = elem::bf16;       // x, the weights, y
    elem logits_type = elem::f32; // the router logits (the decoder's are in the activations')
    // Kernel 1 asks L2 for the active experts' down matrices at its tail where they total at
    // most this (bytes; 0: never): below the L2 (50 MB on an H100/H200), with room for the
    // streamed gate/up rows passing through it.
    std::int64_t l2_prefetch_bytes = k_moe_default_l2_prefetch;
    // One launch where the device can (above); false asks for the two kernels (an A/B of the
    // same step in one process).
    bool one_launch = true;
    // The fused prologue (the one launch only; the decoder's MoE layers): with `router` set, x is
    // the residual stream (un-normalised) and `logits` is unused: every block computes
    // h = RMSNorm(x) with norm_weight [H] and norm_eps (kernels/rmsnorm.cu's value and rounding)
    // into its shared memory, block e the router logit of expert e (router: E x H, contiguous, in
    // x's dtype; rounded to it as the GEMV rounds them) into the workspace, then a grid barrier,
    // then the step as above on h. One launch where there were three (the norm, the router's
    // GEMV, the MoE step).
    const void* norm_weight = nullptr;
    const void* router = nullptr;
    double norm_eps = 1e-6;
    // With the fused prologue: y = x + the block's output (the decoder's residual add, rounded
    // once), so the next layer's norm has no add left to do (its GEMV can take the norm).
    bool add_residual = false;
    // A probe of the one launch's phases for timing them (bench and the timed gpu test only):
    // it stops after the routing (1), the gate/up units (2), the grid barrier (3) or the first
    // group's dots (4, before its sums are added), and with the fused prologue after the norm and
    // the router's dots (5) or the prologue's grid barrier (6), and inside the routing after its
    // softmax (7) or its top-k rounds (8); y is then NOT the step's.
    int probe_stop_after = 0;
};

struct moe_plan {
    int kernels = 2;                    // 1: the one launch (one_launch_blocks), 2: the two
    bool dependent_launch = false;      // the one launch behind the previous kernel (sm_90 on)
    std::int64_t one_launch_blocks = 0; // its persistent grid
    std::int64_t smem_bytes = 0;        // its dynamic shared memory a block
    int sm_count = 0;                   // the device's, to bound the grid by residency
    int threads = k_moe_threads;
    int token_tile = 1;               // tokens a kernel is compiled for: 1, 2, 4 or 8
    std::int64_t pairs = 0;           // T x k (token, slot) pairs
    std::int64_t max_active = 0;      // experts the pairs can reach: min(E, T x k)
    std::int64_t gate_up_units = 0;   // at most: max_active x W (expert, column) units
    std::int64_t down_units = 0;      // H output columns
    std::int64_t gate_up_blocks = 0;  // the two kernels' persistent grids: kernel 1's
    std::int64_t down_blocks = 0;     // and kernel 2's
    std::int64_t workspace_bytes = 0; // routing (ints and floats) + intermediate [pairs, W]
                                      // (+ the logits [T, E] when fused)
    bool fused_prologue = false;      // the norm and the router in the launch (moe_args)
    // Default since session 50 (FOURFOLD_MOE_FLAGGED_LOGITS=0: the barrier; on an H100
    // qwen3-30b-a3b native_fused +1.5-1.9 % at ctx 512, the fused block at T = 1 -0.77 µs,
    // docs/performance.md session 50): the fused prologue's logits published without its grid
    // barrier. Block e stores logit e with a flag word in one 64-bit store (the value as fp32 in
    // the low half, ~generation in the high half: the generation of the barrier counters this
    // launch read after its dependency wait, the same in every block and never an earlier
    // launch's); the routing warps poll their row until every flag is this launch's (NCCL's LL
    // protocol). One L2 round trip after the last logit instead of the barrier's atomic arrival and
    // its poll. The same logits, so the same bits.
    bool flagged_logits = false;
    // Default since session 50 (FOURFOLD_MOE_TOPK_LOGITS=0: the softmax first; with the flagged
    // logits +0.5 % more on the same H100 decode; the one launch, with normalise): the routing's
    // top-k rounds select on the logits and only the k selected are exponentiated, exp(l - l_top) /
    // their sum, where the softmax over every expert came first (the same choice, exp being
    // monotonic; the weights equal up to rounding, not bitwise).
    bool topk_on_logits = false;
    // Trial of session 51, default with the flagged logits (FOURFOLD_MOE_DOWN_COUNTERS=0: the down
    // barrier): no grid barrier before the down phase. Each gate/up unit done adds one (a release
    // add after its stores) to its expert's counter; a down item's warp waits (acquire loads) for
    // its expert's W units and reads those rows, so a warp whose expert is done goes on while the
    // last units run elsewhere. The same sums in the same order: the barrier's bits. The launch's
    // generation moves on as the last block leaves (its arrival counted after the prologue).
    bool down_counters = false;
    // Default with the down counters since session 52 (FOURFOLD_MOE_DOWN_COUNT=unit: each unit's
    // own add): the units counted a block at a time, after the block barrier that follows its
    // gate/up units (a fence, then one relaxed add per expert the block's units reach), where each
    // unit's release add drained its warp's prefetched loads (a fence each: on the H200 the gate/up
    // phase 19.7 -> 22.2 µs at T = 1, session 51). H100, session 52 (build 124b801): qwen3-30b-a3b
    // native_fused 304.4 -> 309.2 tokens/s at ctx 512 (docs/performance.md).
    bool down_counts_a_block = false;
    // Default since session 53 (FOURFOLD_MOE_COMPILED_DEFAULTS=0: the general instance; with the
    // four above all on): the one launch's instance with them known to the compiler, the other
    // paths' code left out (the general instance takes them as arguments). Session 52 found each
    // trial's code costing the paths that did not take it. H100, session 53 (build f67b29d):
    // qwen3-30b-a3b native_fused 309.4 -> 314.4 / 314.7 tokens/s at ctx 512, the fused block at
    // T = 1 35.89 -> 34.84 µs (docs/performance.md).
    bool compiled_defaults = false;
    // Default since session 62 (FOURFOLD_MOE_COMPILED_UNFUSED=0: the general instance): the one
    // launch without the fused prologue (moe_ffn's, its logits fp32 from the kernel before) in an
    // instance that knows it: no prologue, no flags, no residual, the top-k on the logits compiled
    // in (the down counters still an argument); bf16 and fp16 with fp32 logits. The T = 1
    // instance 5,504 SASS instructions against the general one's 8,000 (bf16, session 62's head).
    // H100, session 62 (build d2ab552): moe_decode ffn T = 1 35.7 -> 35.1 µs, T = 2 64.4 -> 63.3
    // µs, the same bits (docs/performance.md).
    bool compiled_unfused = false;
    bool add_residual = false;           // y = x + the output (moe_args::add_residual)
    std::int64_t expert_bytes = 0;       // one expert's gate/up and down weights
    std::int64_t l2_prefetch_budget = 0; // two kernels: the args' l2_prefetch_bytes (0: none)
    std::string valid; // empty when the plan can run; else what is wrong with the arguments
    std::string describe() const;
};

moe_plan plan_moe(const moe_args& a, const device_limits& d);
launch_status launch_moe(const moe_plan& p, const moe_args& a, stream_t stream);
// The one launch's blocks an SM on the current device, as its launch bounds its grid (asked of
// the runtime once per kernel); 0 for a two-kernel plan or where the kernel cannot be resident.
int moe_one_launch_residency(const moe_plan& p, const moe_args& a);

struct grouped_gemv_args {
    const void* rows = nullptr;            // R x K, row stride ld_rows
    const void* w = nullptr;               // E x N x K, contiguous
    const std::int32_t* offsets = nullptr; // E cumulative ends of the groups, on the device
    void* y = nullptr;                     // R x N, row stride ld_y
    std::int64_t rows_count = 0, experts = 0, n = 0, k = 0, ld_rows = 0, ld_y = 0;
    elem type = elem::bf16;
};

struct grouped_gemv_plan {
    int threads = k_moe_threads;
    int row_tile = 8; // rows of a group a warp takes with one read of its weight rows
    std::int64_t max_active = 0;
    std::int64_t units = 0; // at most: max_active x ceil(N / 2) (expert, row pair) units
    std::int64_t blocks = 0;
    std::string valid;
    std::string describe() const;
};

grouped_gemv_plan plan_grouped_gemv(const grouped_gemv_args& a, const device_limits& d);
launch_status launch_grouped_gemv(const grouped_gemv_plan& p, const grouped_gemv_args& a,
                                  stream_t stream);

// The workspace's layout, shared by the plan and the kernels (all offsets in bytes).
struct moe_workspace_layout {
    std::int64_t pairs = 0;
    std::int64_t header = 0;        // int32: [0] active experts
    std::int64_t active_expert = 0; // int32 [pairs]: expert id of active slot a (ascending)
    std::int64_t active_begin = 0;  // int32 [pairs]: its first sorted pair
    std::int64_t active_count = 0;  // int32 [pairs]: its pairs
    std::int64_t sorted_token = 0;  // int32 [pairs]: the token of sorted pair i
    std::int64_t sorted_weight = 0; // float [pairs]: its routing weight
    std::int64_t inter = 0;         // elem [pairs, W]: silu(gate) * up of sorted pair i
    std::int64_t bytes = 0;
};
FOURFOLD_HOST_DEVICE inline std::int64_t moe_up16(std::int64_t b) {
    return (b + 15) / 16 * 16;
}
FOURFOLD_HOST_DEVICE inline moe_workspace_layout moe_layout(std::int64_t pairs, std::int64_t width,
                                                            std::size_t es) {
    moe_workspace_layout l;
    l.pairs = pairs;
    l.header = 0;
    l.active_expert = 16;
    l.active_begin = l.active_expert + moe_up16(4 * pairs);
    l.active_count = l.active_begin + moe_up16(4 * pairs);
    l.sorted_token = l.active_count + moe_up16(4 * pairs);
    l.sorted_weight = l.sorted_token + moe_up16(4 * pairs);
    l.inter = l.sorted_weight + moe_up16(4 * pairs);
    l.bytes = l.inter + moe_up16(pairs * width * static_cast<std::int64_t>(es));
    return l;
}

// The fused prologue's part of the workspace, after the layout above (offsets in bytes).
// (h = RMSNorm(x) stays in each block's shared memory: every block computes the same bits.)
struct moe_fused_workspace_layout {
    std::int64_t logits = 0; // elem [T, E]: the router's logits
    std::int64_t flagged =
        0; // uint64 [T, E]: the logits with their flags (moe_plan::flagged_logits)
    std::int64_t bytes = 0;
};
FOURFOLD_HOST_DEVICE inline moe_fused_workspace_layout
moe_fused_layout(const moe_workspace_layout& base, std::int64_t tokens, std::int64_t experts,
                 std::size_t es, bool flagged = false) {
    moe_fused_workspace_layout l;
    const auto e = static_cast<std::int64_t>(es);
    l.logits = base.bytes;
    l.flagged = l.logits + moe_up16(tokens * experts * e);
    l.bytes = l.flagged + (flagged ? tokens * experts * 8 : 0);
    return l;
}

} // namespace fourfold::kernels
