// The host half of the FP8 weight-only GEMV: path, rows per warp, split-K, grid.
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/gemv_fp8.hpp"

#include <cmath>

namespace fourfold::kernels {

const char* to_string(fp8_scaling s) {
    return s == fp8_scaling::per_row ? "per_row" : "per_tensor";
}

std::string gemv_fp8_plan::describe() const {
    std::string s = !vectorised ? "scalar loads (one e4m3 a lane)"
                    : column_stationary
                        ? "16-byte loads (16 e4m3), a warp a 1 KB slice of K down a run of rows (x "
                          "in registers)"
                    : claimed  ? "16-byte loads (16 e4m3), 2 KB steps claimed by a block's warps"
                    : balanced ? "16-byte loads (16 e4m3), rows split evenly over each block's "
                                 "warps"
                    : k_split == 1 ? "16-byte loads (16 e4m3), rows streamed back to back"
                                   : "16-byte loads (16 e4m3), a block per row block";
    s += ", " + std::to_string(rows_per_warp) + " row(s)/warp";
    if (column_stationary)
        s += ", " + std::to_string(slices) + " slice(s)/row, " + std::to_string(cs_l2_rows) +
             " row(s) a slice asked of L2 first";
    if (swiglu_slices)
        s += ", SwiGLU made by each warp for its slice";
    if (cs_fetch_first)
        s += ", the first rows' weights loaded before the norm";
    if (epilogue_prefetch)
        s += ", the epilogue's scale and bias fetched at the start";
    s += ", split-K " + std::to_string(k_split) + " warp(s)/row group";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
    if (dependent_launch)
        s += ", dependent launch";
    if (fused_norm)
        s += ", RMSNorm fused in front";
    if (fused_swiglu)
        s += ", SwiGLU fused in front";
    if (!why_scalar.empty())
        s += " (scalar: " + why_scalar + ")";
    return s;
}

gemv_fp8_plan plan_gemv_fp8(const gemv_fp8_args& a, const device_limits& d) {
    gemv_fp8_plan p;
    if (a.tokens < 1 || a.tokens > k_gemv_fp8_max_tokens) {
        p.valid = "tokens must be 1.." + std::to_string(k_gemv_fp8_max_tokens);
        return p;
    }
    if (a.n < 1 || a.k < 1) {
        p.valid = "n and k must be at least 1";
        return p;
    }
    if (a.n > (std::int64_t{1} << 31) - 1 || a.k > (std::int64_t{1} << 31) - 1) {
        p.valid = "n and k must be below 2^31";
        return p;
    }
    if (!a.scale) {
        p.valid = "the scale is missing (one float per tensor, or n per row, on the device)";
        return p;
    }
    const char* prologue = a.norm_weight ? "RMSNorm" : a.swiglu_x ? "SwiGLU" : nullptr;
    if (a.norm_weight && a.swiglu_x) {
        p.valid = "one prologue at a time: a fused RMSNorm or a fused SwiGLU";
        return p;
    }
    if (a.norm_weight && (alignment_of(a.norm_weight) < 16 || !(a.norm_eps >= 0))) {
        p.valid = "a fused RMSNorm's weight must be 16-byte aligned and its eps >= 0";
        return p;
    }
    if (a.swiglu_x && a.ld_x < 2 * a.k) {
        p.valid = "a fused SwiGLU reads [gate | up] rows of 2K elements: ld_x must be >= 2K";
        return p;
    }
    // The bf16 GEMV measured 1.1-1.5 us a call won on its FMA paths, which these mirror.
    p.dependent_launch = dependent_launch(d);
    constexpr std::int64_t vw = 16; // e4m3 values in a 16-byte load
    if (a.inc_x != 1 || a.inc_w != 1)
        p.why_scalar = "K is not the contiguous dimension";
    else if (alignment_of(a.x) < 16 || alignment_of(a.w) < 16)
        p.why_scalar = "x or W is not 16-byte aligned (a view at an offset)";
    else if (a.k % vw != 0)
        p.why_scalar = "K = " + std::to_string(a.k) + " is not a multiple of 16";
    else if ((a.ld_x * 2) % 16 != 0 || a.ld_w % 16 != 0)
        p.why_scalar = "a row stride is not a multiple of 16 bytes";
    p.vectorised = p.why_scalar.empty();

    const std::int64_t nkv = a.k / vw;
    // R rows a warp share each x vector they load: 2 from two tokens on (with one row, x's loads
    // from L1 and its conversions would be 2 T per weight byte: at 8 tokens more than L1 and the
    // ALUs give at the weights' bandwidth); at one token, rows shorter than 4 KB go 2 or 4 to a
    // warp so that a step still has 8 vectors of 16 bytes a lane in flight.
    if (!p.vectorised)
        p.rows_per_warp = 1;
    else if (a.tokens >= 2)
        p.rows_per_warp = 2;
    else
        p.rows_per_warp = nkv >= 256 ? 1 : nkv >= 128 ? 2 : 4;
    p.unroll = p.vectorised ? 4 / p.rows_per_warp : 1;
    const std::int64_t groups = (a.n + p.rows_per_warp - 1) / p.rows_per_warp;
    const std::int64_t units = (p.vectorised ? nkv : a.k) / 32; // vectors (elements) per lane
    const double capacity =
        static_cast<double>(d.sm_count) * gemv_fp8_blocks_per_sm(static_cast<int>(a.tokens));
    const double resident_warps = capacity * 8;

    // Split K over the warps of a block (2, 4 or 8) where the unsplit grid is under half a wave
    // of resident blocks, as far as it takes to fill half a wave (the bf16 GEMV's rule, measured
    // there: a split of a grid of a wave or more cost more than it gained).
    p.k_split = 1;
    std::int64_t blocks = (groups + 7) / 8;
    while (p.k_split < 8 && static_cast<double>(blocks) < capacity / 2 &&
           units >= 2 * std::int64_t{p.k_split}) {
        p.k_split *= 2;
        const std::int64_t per_block = 8 / p.k_split;
        blocks = (groups + per_block - 1) / per_block;
    }
    // Between one and 8 row groups a resident warp the grid's last round of rows is what costs
    // (the bf16 GEMV's model, measured there: ceil(N ks / W) units of 1/ks of a row, plus 5 % for
    // the reduction). fp8 rows are half as long, so its units of 5 KB are a 10 KB bf16 row's
    // halves; kept at 5 KB (below, a unit was a DRAM latency more than its bytes, build 834ac6a).
    const std::int64_t group_bytes = a.k * p.rows_per_warp;
    const auto rows = static_cast<double>(groups);
    if (p.vectorised && p.k_split == 1 && rows > resident_warps && rows < 8 * resident_warps) {
        auto cost = [&](int ks) {
            return std::ceil(rows * ks / resident_warps) * (1.0 / ks + (ks > 1 ? 0.05 : 0.0));
        };
        int best = 1;
        for (int ks = 2; ks <= 4; ks *= 2)
            if (group_bytes / ks >= 5120 && units >= ks && cost(ks) < cost(best) &&
                cost(ks) < 0.9 * cost(1))
                best = ks;
        p.k_split = best;
    }
    // One token from 4 rows a block of the wave on, rows of 2 KB or more: the balanced split
    // (the bf16 GEMV's rule and reasons, plan_gemv). With rows as the unit of work the last round
    // costs a whole row time: 14336 rows over 4224 resident warps take 4 row times where 3.4
    // would do. (4096 rows are one a warp either way, 128 warps idle: balanced, 3 % less a warp.)
    const double block_steps =
        (static_cast<double>(a.n) / capacity + 1) * std::ceil(static_cast<double>(nkv) / 128);
    if (p.vectorised && a.tokens == 1 && nkv >= 128 && static_cast<double>(a.n) >= 4 * capacity &&
        block_steps < 2147483647.0) {
        p.balanced = true;
        p.rows_per_warp = 1;
        p.unroll = 4;
        p.k_split = 1;
        p.blocks = static_cast<std::int64_t>(capacity);
        p.row_blocks = p.blocks;
        // With a prologue, the steps claimed at run time by one block of 32 warps an SM
        // (gemv_claim over e4m3 weights, the prologue once an SM), where the prologue's x and a
        // float a step of the largest block's rows fit in 48 KiB. Without one the static
        // partition: measured on the H200 (session 37, 87d427c, the claimed steps against it on
        // one machine) claiming lost on every shape alone (4096 x 4096 8.35 -> 8.50 µs, 28672 x
        // 4096 36.1 -> 37.8, 4096 x 14336 19.3 -> 21.0, the LM head 148 -> 158), where the bf16
        // GEMV's claimed steps gained; with the norms and the SwiGLU fused, llama3-8b fp8
        // native_fused went 345.8 -> 350.4 tokens/s at ctx 512 (three launches a layer fewer).
        // (Session 38's ring of 4 steps of 1 KB in flight, balanced and claimed, lost on every
        // shape: 28672 x 4096 35.2 -> 39.5 µs, the LM head 143 -> 161, llama3-8b fp8 353 -> 324
        // tokens/s; removed.)
        const std::int64_t x_bytes = a.k * 2;
        // The column-stationary kernel (session 40) wherever K is at most 16 slices of 1 KB and
        // the prologue's x and a float a row of each warp's run fit in 48 KiB: on the H200 it
        // moved 4.1 TB/s where the balanced kernel moved 3.3 (28672 x 4096 35.6 -> 28.9 µs, the LM
        // head 148 -> 122, 4096 x 4096 8.4 -> 6.7; with the prologues 36.1 -> 30.0, 145 -> 124,
        // 20.2 -> 17.8), and llama3-8b fp8 native_fused went 350.5 -> 387.5 tokens/s (build
        // 73b8d6b, stage s40_c). Wider K keeps the balanced and claimed kernels below.
        {
            const auto cs_shape = gemv_cs_shape_planned(a.n, nkv, d.sm_count);
            const std::int64_t bytes = (prologue ? x_bytes : 0) + cs_shape.sum_bytes;
            if (cs_shape.run_rows > 0 && bytes <= k_gemv_norm_max_shared_bytes) {
                p.column_stationary = true;
                p.blocks = p.row_blocks = cs_shape.blocks;
                p.threads = cs_shape.threads;
                p.slices = static_cast<int>(cs_shape.slices);
                p.slice_rows = static_cast<int>(cs_shape.run_rows);
                p.shared_bytes = bytes;
                p.fused_norm = a.norm_weight != nullptr;
                p.cs_fetch_first = cs_fetch_first(p.fused_norm);
                p.cs_l2_rows = cs_l2_rows(cs_shape);
                p.fused_swiglu = a.swiglu_x;
                p.balanced = false;
                // A fused SwiGLU made by each warp for its own slice, no x in shared memory
                // (the same bits; FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES=0 takes the block's prologue
                // instead, for A/B runs): on the H200 4096 x 14336 + SwiGLU + bias 17.7 -> 17.0
                // µs, llama3-8b fp8 native_fused 387.6 -> 391.0 tokens/s at ctx 512 (s41_c)
                p.swiglu_slices =
                    a.swiglu_x && !switch_is("FOURFOLD_GEMV_FP8_CS_SWIGLU_SLICES", "0");
                if (p.swiglu_slices)
                    p.shared_bytes -= x_bytes;
                // the scale (and the bias) fetched at the start (gemv.hpp)
                p.epilogue_prefetch =
                    take_epilogue_prefetch(p.shared_bytes, k_gemv_cs_epilogue_bytes, true);
                return p;
            }
        }
        const std::int64_t slots = (a.n + d.sm_count - 1) / d.sm_count * ((nkv + 127) / 128) * 4;
        if (prologue && x_bytes + slots <= k_gemv_norm_max_shared_bytes) {
            p.claimed = true;
            p.blocks = p.row_blocks = d.sm_count;
            p.threads = k_gemv_claim_threads;
            p.shared_bytes = x_bytes + slots;
            p.fused_norm = a.norm_weight != nullptr;
            p.fused_swiglu = a.swiglu_x;
            // the scale (and the bias) fetched at the start (gemv.hpp)
            p.epilogue_prefetch =
                take_epilogue_prefetch(p.shared_bytes, k_gemv_claim_epilogue_bytes, true);
        } else if (prologue) {
            p.valid = std::string("a fused ") + prologue +
                      " keeps K bf16 values and a float a 2 KB "
                      "step of a block's rows in shared memory, at most " +
                      std::to_string(k_gemv_norm_max_shared_bytes) + " bytes; " +
                      std::to_string(x_bytes + slots) + " here: run it on its own";
        }
        return p;
    }
    if (prologue) {
        p.valid = std::string("a fused ") + prologue +
                  " takes the column-stationary or claimed path only (one token, 16-byte rows "
                  "of 2 KB or more, at least 4 rows a block of the wave): run it on its own";
        return p;
    }
    const std::int64_t per_block = 8 / p.k_split;
    p.row_blocks = (groups + per_block - 1) / per_block;
    p.blocks = p.row_blocks;
    // Unsplit and vectorised: each warp streams its row groups back to back with the next
    // group's loads in flight; from 2 row groups a resident warp on one wave of blocks
    // (persistent), below that a block per 8 row groups (the block scheduler balances).
    if (p.vectorised && p.k_split == 1 && rows >= 2 * resident_warps)
        p.blocks = static_cast<std::int64_t>(capacity);
    // The scalar path: any strides, a grid-stride loop over row blocks, at most 8 waves.
    if (!p.vectorised && static_cast<double>(p.blocks) > 8 * capacity)
        p.blocks = static_cast<std::int64_t>(8 * capacity);
    return p;
}

} // namespace fourfold::kernels
