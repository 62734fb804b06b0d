// The host half of the MoE decode step: validity, the token tile, one launch or two, the
// persistent grids and the workspace (pure arithmetic: no CUDA call).
#include "fourfold/kernels/moe.hpp"

#include <algorithm>

namespace fourfold::kernels {
namespace {

constexpr std::int64_t k_max_dim = (std::int64_t{1} << 31) - 1;

int token_tile(std::int64_t tokens) {
    return tokens <= 1 ? 1 : tokens <= 2 ? 2 : tokens <= 4 ? 4 : 8;
}

// What no vector path can take: 16-byte rows and 16-byte aligned pointers.
std::string vector_problem(const char* what, const void* p, std::int64_t row_elems,
                           std::int64_t es) {
    if (alignment_of(p) < 16)
        return std::string(what) + " is not 16-byte aligned (a view at an offset)";
    if ((row_elems * es) % 16 != 0)
        return std::string(what) + "'s rows of " + std::to_string(row_elems) +
               " elements are not a multiple of 16 bytes";
    return {};
}

std::int64_t persistent_blocks(std::int64_t units, const device_limits& d) {
    const std::int64_t warps_per_block = k_moe_threads / 32;
    const std::int64_t wave = static_cast<std::int64_t>(d.sm_count) * k_moe_blocks_per_sm;
    return std::max<std::int64_t>(1,
                                  std::min(wave, (units + warps_per_block - 1) / warps_per_block));
}

// Two blocks of the one launch on every SM: its stages, its routing and what the runtime keeps.
bool one_launch_fits(const device_limits& d) {
    const std::int64_t block = k_moe_one_launch_dynamic_smem + k_moe_one_launch_static_smem;
    return d.cc_major >= 8 && d.max_smem_per_block >= block &&
           d.max_smem_per_sm >= k_moe_blocks_per_sm * block;
}

} // namespace

std::string moe_plan::describe() const {
    if (kernels == 1)
        return std::string("1 kernel: route + gate/up + SwiGLU, then down + weighted combine ") +
               (down_counters ? (down_counts_a_block
                                     ? "as each expert's units are counted done, a block's at "
                                       "once (no grid barrier; "
                                     : "as each expert's units are counted done (no grid barrier; ")
                              : "behind a grid barrier (") +
               std::to_string(one_launch_blocks) + " persistent blocks of " +
               std::to_string(threads) +
               ", routing recomputed per block; a warp per (expert, column) for gate/up, then a "
               "block per " +
               std::to_string(k_moe_down_columns) +
               " output columns and a warp per active expert, its down rows staged in shared "
               "memory (" +
               std::to_string(k_moe_stage_bytes) +
               (down_counters ? " B a warp, cp.async) as the units end; fixed-order fp32 sums)"
                              : " B a warp, cp.async) before the barrier; fixed-order fp32 sums)") +
               (fused_prologue ? std::string("; the RMSNorm and the router's GEMV fused in front "
                                             "(h in each block's shared memory, the logits in "
                                             "the workspace, ") +
                                     (flagged_logits ? "each with a flag word, polled: no first "
                                                       "grid barrier)"
                                                     : "a first grid barrier)")
                               : std::string()) +
               (add_residual ? "; the residual added to the output" : "") +
               (topk_on_logits ? "; top-k on the logits, only the k chosen exponentiated" : "") +
               (compiled_defaults ? "; these defaults compiled into the kernel's instance" : "") +
               (compiled_unfused ? "; no prologue, compiled into the kernel's instance" : "") +
               (dependent_launch ? ", dependent launch" : "") + "; 16-byte loads, token tile " +
               std::to_string(token_tile) + ", workspace " + std::to_string(workspace_bytes) + " B";
    return std::to_string(kernels) + " kernels: route + gate/up + SwiGLU (" +
           std::to_string(gate_up_blocks) + " persistent blocks of " + std::to_string(threads) +
           ", a warp per (expert, column), routing recomputed per block), down + weighted "
           "combine (" +
           std::to_string(down_blocks) +
           " blocks, a warp per output column, fixed-order fp32 "
           "sum); 16-byte loads, token tile " +
           std::to_string(token_tile) + ", workspace " + std::to_string(workspace_bytes) +
           " B, down weights prefetched to L2 where the active experts' total <= " +
           std::to_string(l2_prefetch_budget) + " B";
}

moe_plan plan_moe(const moe_args& a, const device_limits& d) {
    moe_plan p;
    if (a.tokens < 1 || a.tokens > k_moe_max_tokens) {
        p.valid = "tokens must be 1.." + std::to_string(k_moe_max_tokens);
        return p;
    }
    if (a.experts < 1 || a.experts > k_moe_max_experts) {
        p.valid = "experts must be 1.." + std::to_string(k_moe_max_experts);
        return p;
    }
    if (a.top_k < 1 || a.top_k > std::min<std::int64_t>(a.experts, k_moe_max_top_k)) {
        p.valid = "top_k must be 1..min(experts, " + std::to_string(k_moe_max_top_k) + ")";
        return p;
    }
    if (a.hidden < 1 || a.width < 1 || a.hidden > k_max_dim || a.width > k_max_dim ||
        a.experts * 2 * a.width * a.hidden > (std::int64_t{1} << 62)) {
        p.valid = "hidden and width must be 1..2^31-1";
        return p;
    }
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    for (const auto& why : {vector_problem("x", a.x, a.hidden, es),
                            vector_problem("w_gate_up", a.w_gate_up, a.hidden, es),
                            vector_problem("w_down", a.w_down, a.width, es)})
        if (!why.empty()) {
            p.valid = why;
            return p;
        }
    if ((a.ld_x * es) % 16 != 0) {
        p.valid = "x's row stride is not a multiple of 16 bytes";
        return p;
    }
    if (a.ld_logits < a.experts || a.ld_y < a.hidden || a.ld_x < a.hidden) {
        p.valid = "a row stride is shorter than its row";
        return p;
    }
    if (a.logits_type != elem::f32 && a.logits_type != a.type) {
        p.valid = "the router logits must be fp32 or the input's dtype";
        return p;
    }
    if (alignment_of(a.workspace) < 16) {
        p.valid = "the workspace is not 16-byte aligned";
        return p;
    }
    if (std::min(a.experts, a.tokens * a.top_k) * a.width >= (std::int64_t{1} << 31)) {
        p.valid = "the active experts' intermediate columns (experts reached x width) must stay "
                  "below 2^31";
        return p;
    }
    p.token_tile = token_tile(a.tokens);
    p.pairs = a.tokens * a.top_k;
    p.max_active = std::min(a.experts, p.pairs);
    p.gate_up_units = p.max_active * a.width;
    p.down_units = a.hidden;
    p.gate_up_blocks = persistent_blocks(p.gate_up_units, d);
    p.down_blocks = persistent_blocks(p.down_units, d);
    p.sm_count = d.sm_count;
    if (a.one_launch && one_launch_fits(d)) {
        p.kernels = 1;
        p.one_launch_blocks = std::max(p.gate_up_blocks, p.down_blocks);
        p.smem_bytes = k_moe_one_launch_dynamic_smem;
        p.dependent_launch = dependent_launch(d);
        p.topk_on_logits = a.normalise && !switch_is("FOURFOLD_MOE_TOPK_LOGITS", "0");
    }
    p.workspace_bytes = moe_layout(p.pairs, a.width, static_cast<std::size_t>(es)).bytes;
    if (a.add_residual && !a.router) {
        p.valid = "add_residual needs the fused prologue (router and norm_weight)";
        return p;
    }
    if (a.router || a.norm_weight) {
        std::string why;
        if (!a.router || !a.norm_weight)
            why = "the fused prologue takes the router and the norm's weight together";
        else if (p.kernels != 1)
            why = "the fused norm and router need the one launch (one_launch, and a device with "
                  "its shared memory)";
        else if (a.logits_type != a.type)
            why = "the fused router writes its logits in x's dtype: logits_type must be type";
        else if (a.tokens * a.hidden * es > k_moe_one_launch_dynamic_smem)
            why = "the fused norm keeps tokens x hidden elements in the stage area (" +
                  std::to_string(k_moe_one_launch_dynamic_smem) + " B)";
        else if (!(a.norm_eps > 0))
            why = "norm_eps must be > 0";
        else if (a.ld_x < a.hidden)
            why = "a row stride is shorter than its row";
        if (why.empty())
            for (const auto& w : {vector_problem("router", a.router, a.hidden, es),
                                  vector_problem("norm_weight", a.norm_weight, a.hidden, es)})
                if (!w.empty()) {
                    why = w;
                    break;
                }
        if (!why.empty()) {
            p.valid = why;
            return p;
        }
        p.fused_prologue = true;
        p.add_residual = a.add_residual;
        p.flagged_logits = !switch_is("FOURFOLD_MOE_FLAGGED_LOGITS", "0");
        p.down_counters = p.flagged_logits && !switch_is("FOURFOLD_MOE_DOWN_COUNTERS", "0");
        p.down_counts_a_block = p.down_counters && !switch_is("FOURFOLD_MOE_DOWN_COUNT", "unit");
        p.compiled_defaults = p.flagged_logits && p.topk_on_logits && p.down_counters &&
                              p.down_counts_a_block &&
                              !switch_is("FOURFOLD_MOE_COMPILED_DEFAULTS", "0");
        p.workspace_bytes =
            moe_fused_layout(moe_layout(p.pairs, a.width, static_cast<std::size_t>(es)), a.tokens,
                             a.experts, static_cast<std::size_t>(es), p.flagged_logits)
                .bytes;
    }
    // The down counters, a block's count, in the one launch without the fused prologue (moe_ffn's:
    // the router's logits come from the kernel before), where the down barrier was: the default
    // from a token tile of 2 since session 60 (H100, moe_decode ffn, cold graph: T = 2 -2.8 %,
    // 4 -4.3 %, 8 -3.5 %; at T = 1 +2.5 %, so the barrier stays there).
    // FOURFOLD_MOE_UNFUSED_COUNTERS=1 takes them at every tile, =0 at none. No flags there: the
    // counters' sequence and the barrier's generation move on as the last block leaves.
    if (p.kernels == 1 && !p.fused_prologue &&
        (switch_is("FOURFOLD_MOE_UNFUSED_COUNTERS", "1") ||
         (p.token_tile >= 2 && !switch_is("FOURFOLD_MOE_UNFUSED_COUNTERS", "0")))) {
        p.down_counters = true;
        p.down_counts_a_block = true;
    }
    p.compiled_unfused = p.kernels == 1 && !p.fused_prologue && p.topk_on_logits &&
                         a.logits_type == elem::f32 && a.type != elem::f32 &&
                         !switch_is("FOURFOLD_MOE_COMPILED_UNFUSED", "0");
    p.expert_bytes = 3 * a.width * a.hidden * es;
    p.l2_prefetch_budget = std::max<std::int64_t>(0, a.l2_prefetch_bytes);
    return p;
}

std::string grouped_gemv_plan::describe() const {
    return "grouped GEMV: " + std::to_string(blocks) + " persistent blocks of " +
           std::to_string(threads) + ", a warp per (expert, 2 rows), " + std::to_string(row_tile) +
           " rows of a group per read of its weights; 16-byte loads";
}

grouped_gemv_plan plan_grouped_gemv(const grouped_gemv_args& a, const device_limits& d) {
    grouped_gemv_plan p;
    if (a.experts < 1 || a.experts > k_moe_max_experts) {
        p.valid = "experts must be 1.." + std::to_string(k_moe_max_experts);
        return p;
    }
    if (a.rows_count < 0 || a.rows_count > k_max_dim) {
        p.valid = "rows must be 0..2^31-1";
        return p;
    }
    if (a.n < 1 || a.k < 1 || a.n > k_max_dim || a.k > k_max_dim) {
        p.valid = "n and k must be 1..2^31-1";
        return p;
    }
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    for (const auto& why :
         {vector_problem("rows", a.rows, a.k, es), vector_problem("w", a.w, a.k, es)})
        if (!why.empty()) {
            p.valid = why;
            return p;
        }
    if ((a.ld_rows * es) % 16 != 0 || a.ld_rows < a.k || a.ld_y < a.n) {
        p.valid = "the rows' stride is not a multiple of 16 bytes, or a stride is shorter than "
                  "its row";
        return p;
    }
    p.max_active = std::min(a.experts, a.rows_count);
    p.units = p.max_active * ((a.n + 1) / 2);
    p.blocks = p.units == 0 ? 0 : persistent_blocks(p.units, d);
    return p;
}

} // namespace fourfold::kernels
