// The host half of the decode GEMV: rows per warp, split-K, grid.
#include "fourfold/kernels/gemv.hpp"

#include <algorithm>

namespace fourfold::kernels {

std::string gemv_plan::describe() const {
    std::string s = vectorised ? "16-byte loads" : "scalar loads";
    s += ", " + std::to_string(rows_per_warp) + " row(s)/warp";
    s += ", split-K " + std::to_string(k_split) + " warp(s)/row group";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
    if (!why_scalar.empty()) s += " (scalar: " + why_scalar + ")";
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
    const std::int64_t units = p.vectorised ? a.k / vw : a.k; // per row, per lane step
    const std::int64_t target_warps = static_cast<std::int64_t>(d.sm_count) * 48;
    // two rows per warp where there are rows enough (more loads in flight per lane, and x read
    // once for both), one otherwise
    p.rows_per_warp = p.vectorised && (a.n >= 2 * target_warps / 3 || (a.tokens >= 4 && a.n >= 1024))
                          ? 2
                          : 1;
    p.unroll = p.vectorised ? 8 / p.rows_per_warp : 4;
    const std::int64_t row_groups = (a.n + p.rows_per_warp - 1) / p.rows_per_warp;
    // split K over the warps of a block until the warps fill the device, keeping at least one
    // unit per lane in every warp's slice
    while (p.k_split < 8 && row_groups * p.k_split < target_warps && units / (2 * p.k_split) >= 32)
        p.k_split *= 2;
    const std::int64_t rows_per_block = (p.threads / 32 / p.k_split) * p.rows_per_warp;
    p.blocks = std::min<std::int64_t>((a.n + rows_per_block - 1) / rows_per_block,
                                      std::int64_t{1} << 30);
    return p;
}

} // namespace fourfold::kernels
