// The host half of the decode GEMV: rows per warp, split-K, grid.
#include "fourfold/kernels/gemv.hpp"

#include <algorithm>
#include <cmath>

namespace fourfold::kernels {

std::string gemv_plan::describe() const {
    std::string s = tensor_cores ? "tensor cores (m16n8k16), 16-byte loads"
                    : streamed
                        ? (persistent ? "16-byte loads, persistent, rows streamed back to back"
                                      : "16-byte loads, streamed, a block per 8 row groups")
                    : vectorised ? "16-byte loads"
                                 : "scalar loads";
    s += ", " + std::to_string(rows_per_warp) + " row(s)/warp";
    s += ", split-K " + std::to_string(k_split) + " warp(s)/row group";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
    if (!why_scalar.empty())
        s += " (scalar: " + why_scalar + ")";
    return s;
}

gemv_plan plan_gemv(const gemv_args& a, const device_limits& d) {
    gemv_plan p;
    if (a.tokens < 1 || a.tokens > k_gemv_max_tokens) {
        p.valid = "tokens must be 1.." + std::to_string(k_gemv_max_tokens);
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
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    const auto vw = 16 / es;
    if (a.inc_x != 1 || a.inc_w != 1)
        p.why_scalar = "K is not the contiguous dimension";
    else if (alignment_of(a.x) < 16 || alignment_of(a.w) < 16)
        p.why_scalar = "x or W is not 16-byte aligned (a view at an offset)";
    else if (a.k % vw != 0)
        p.why_scalar = "K = " + std::to_string(a.k) + " is not a multiple of " + std::to_string(vw);
    else if ((a.ld_x * es) % 16 != 0 || (a.ld_w * es) % 16 != 0)
        p.why_scalar = "a row stride is not a multiple of 16 bytes";
    p.vectorised = p.why_scalar.empty();
    p.tensor_cores = p.vectorised && a.type != elem::f32 && a.tokens >= 2 && a.k % 32 == 0;
    // Split K over the warps of a block (KS = 2, 4 or 8) only where the unsplit grid is less
    // than half a wave of the resident blocks the kernel is compiled for, then as far as it
    // takes to fill half a wave. Measured on the H200 (build 21efb6d): wherever the unsplit grid
    // was a wave or more, a split cost more than it gained (262144x1152: 0.31x of stock with KS 4,
    // against 0.89-0.92x for the unsplit shapes of that size): each split row group pays a
    // shared-memory reduction and a block barrier, and its warps have fewer loads in flight.
    std::int64_t groups = a.n, units = 0;
    int per_sm = gemv_fma_blocks_per_sm(static_cast<int>(a.tokens));
    if (p.tensor_cores) {
        p.rows_per_warp = 16;
        p.unroll = 4;
        groups = (a.n + 15) / 16;
        units = a.k / 32; // 32-column blocks
        per_sm = k_gemv_mma_blocks_per_sm;
    } else {
        p.rows_per_warp = 1;
        p.unroll = p.vectorised ? 8 : 4;
        units = (p.vectorised ? a.k / vw : a.k) / 32; // vectors (or elements) per lane
    }
    const double capacity = static_cast<double>(d.sm_count) * per_sm;
    p.k_split = 1;
    p.blocks = (groups + 7) / 8;
    while (p.k_split < 8 && static_cast<double>(p.blocks) < capacity / 2 &&
           units >= 2 * p.k_split) {
        p.k_split *= 2;
        const std::int64_t per_block = 8 / p.k_split;
        p.blocks = (groups + per_block - 1) / per_block;
    }
    // Between half a wave and 8 rows a warp, rows are the unit of work and the grid's last
    // round of rows is what costs: 5120 rows on the 4224 resident warps take two row times
    // where 1.21 would do (measured, build e62084f: 5120x25600 at 0.83x of cuBLAS). Splitting
    // K in ks makes the unit smaller: ceil(N ks / W) units of 1/ks of a row each, plus a
    // reduction. Taken where it shortens that estimate by 10 % or more, with units of at least
    // 5 KB (below, a unit is a DRAM latency, not its bytes: 9728x2560 at 8 splits ran at 0.40x;
    // 5376x4096 in 4 KB halves lost 3 %, 5120x5120 in 5 KB halves won 4 %, build 834ac6a).
    const double resident_warps = capacity * 8;
    const double rows = static_cast<double>(a.n);
    const std::int64_t row_bytes = a.k * es;
    const bool few_rows_a_warp = rows < 8 * resident_warps;
    if (p.vectorised && !p.tensor_cores && p.k_split == 1 && few_rows_a_warp &&
        rows > resident_warps) {
        auto cost = [&](int ks) {
            return std::ceil(rows * ks / resident_warps) * (1.0 / ks + (ks > 1 ? 0.05 : 0.0));
        };
        int best = 1;
        for (int ks = 2; ks <= 4; ks *= 2)
            if (row_bytes / ks >= 5120 && units >= ks && cost(ks) < cost(best) &&
                cost(ks) < 0.9 * cost(1)) // a gain the model can tell from its own error
                best = ks;
        if (best > 1) {
            p.k_split = best;
            p.blocks = (groups + 8 / best - 1) / (8 / best);
        }
    }
    // Unsplit on the FMA path: the streaming kernel. Rows shorter than 256 vectors (8 a lane)
    // go 2 or 4 to a warp's step, so that a step still has 8 vectors a lane in flight. With 2
    // or more row groups a warp the grid is persistent (one wave; each warp streams its groups
    // back to back, the next group's loads in flight); with fewer, one block per 8 groups and
    // the block scheduler balances (a static round-robin over 1-2 rows a warp left a quarter of
    // the warps a whole row behind; from 2 to 3.4 rows a warp the persistent grid was 3-7 %
    // faster, build 834ac6a). Measured before it (build 21efb6d): a warp per row refilled
    // its pipe once per row, and rows of 1.3-4 KB ran at 0.68-0.9x of cuBLAS.
    if (p.vectorised && !p.tensor_cores && p.k_split == 1) {
        const std::int64_t nkv = a.k / vw;
        p.streamed = true;
        p.rows_per_warp = nkv >= 256 ? 1 : nkv >= 128 ? 2 : 4;
        p.unroll = 8 / p.rows_per_warp;
        const std::int64_t row_groups = (a.n + p.rows_per_warp - 1) / p.rows_per_warp;
        const std::int64_t one_per_warp = (row_groups + 7) / 8;
        p.persistent = static_cast<double>(row_groups) >= 2 * resident_warps;
        p.blocks = p.persistent ? static_cast<std::int64_t>(capacity) : one_per_warp;
    }
    return p;
}

} // namespace fourfold::kernels
