// The host half of the softmax kernel: which path, how many threads and blocks per row.
#include "fourfold/kernels/softmax.hpp"

#include <algorithm>
#include <limits>
#include <string>

namespace fourfold::kernels {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
    return (a + b - 1) / b;
}
int pow2_at_least(std::int64_t v) {
    int p = 1;
    while (p < v)
        p *= 2;
    return p;
}

} // namespace

std::string softmax_plan::describe() const {
    std::string s = kind == path::warp_per_row ? "warp per row"
                    : kind == path::cluster_per_row
                        ? "cluster of blocks per row"
                        : "cooperative grid, blocks of a row meet in L2";
    s += ", " + std::to_string(vec * 1) + "-element loads";
    s += ", " + std::to_string(threads) + " threads/block";
    if (kind != path::warp_per_row)
        s += ", " + std::to_string(cluster) + " block(s)/row";
    s += ", " + std::to_string(cache) + " vector(s)/thread cached";
    if (rereads)
        s += ", rest of the row read again";
    if (dependent)
        s += ", dependent launch";
    if (!why_scalar.empty())
        s += " (scalar: " + why_scalar + ")";
    return s;
}

softmax_plan plan_softmax(const softmax_args& a, const device_limits& d) {
    softmax_plan p;
    if (a.rows < 1 || a.cols < 1) {
        p.valid = "rows and cols must be at least 1";
        return p;
    }
    if (a.ld_x < a.cols || a.ld_y < a.cols) {
        p.valid = "row strides must be at least cols";
        return p;
    }
    if (a.cols > (std::int64_t{1} << 30) || a.rows > (std::int64_t{1} << 24)) {
        p.valid = "at most 2^30 columns and 2^24 rows";
        return p;
    }
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    const auto vw = 16 / es;
    if (alignment_of(a.x) < 16 || alignment_of(a.y) < 16)
        p.why_scalar = "a pointer is not 16-byte aligned";
    else if ((a.ld_x * es) % 16 != 0 || (a.ld_y * es) % 16 != 0)
        p.why_scalar = "a row stride is not a multiple of 16 bytes";
    else if (a.cols % vw != 0)
        p.why_scalar = "cols is not a multiple of " + std::to_string(vw);
    p.vec = p.why_scalar.empty() ? static_cast<int>(vw) : 1;
    const std::int64_t nvec = a.cols / p.vec;
    constexpr int k_max_cache = 8;
    if (nvec <= 32 * std::int64_t{k_max_cache}) {
        p.kind = softmax_plan::path::warp_per_row;
        p.threads = 256;
        p.cluster = 1;
        p.chunk_vectors = nvec;
        p.cache = pow2_at_least(ceil_div(nvec, 32));
        p.dependent = dependent_launch(d);
        return p;
    }
    // A few rows too long for a cluster's registers (the largest cluster's blocks of 512 threads
    // x 8 vectors): a row over as many SMs as the device shares out (at least 128 vectors a
    // block), where that is more than a cluster holds, so no part of it is read twice. Not for
    // the rows a cluster holds: there the grid's barrier through L2 bought nothing (1 x 128,256
    // fp32 6.04 µs on 132 blocks against 5.94 on a cluster of 16, H200, build ba5ea3b).
    const auto cluster_limit = d.clusters() ? d.max_cluster_blocks : 1;
    constexpr std::int64_t k_block_vectors = 512 * std::int64_t{k_max_cache};
    if (d.cooperative_launch && a.rows <= k_softmax_grid_max_rows &&
        nvec > cluster_limit * k_block_vectors) {
        const std::int64_t share = std::min<std::int64_t>(
            std::min<std::int64_t>(d.sm_count, k_softmax_grid_max_blocks) / a.rows, nvec / 128);
        if (share > cluster_limit) {
            p.kind = softmax_plan::path::grid_per_row;
            p.cluster = static_cast<int>(share);
            p.chunk_vectors = ceil_div(nvec, share);
            p.threads = std::clamp(pow2_at_least(ceil_div(p.chunk_vectors, k_max_cache)), 128, 512);
            const auto per_thread = ceil_div(p.chunk_vectors, p.threads);
            p.cache = std::min(pow2_at_least(per_thread), k_max_cache);
            p.rereads = per_thread > p.cache;
            return p;
        }
    }
    p.kind = softmax_plan::path::cluster_per_row;
    // Enough blocks to reach every SM twice over, but at least 128 vectors for each block; a
    // cluster of at most 16 blocks (where the device schedules that size) shares one row.
    // and as many as it takes for every vector to stay in registers between the passes
    // (512 threads x 8 vectors a block), so no part of a row is read twice when avoidable
    std::int64_t c = std::max<std::int64_t>(2 * std::int64_t{d.sm_count} / a.rows,
                                            ceil_div(nvec, k_block_vectors));
    c = std::clamp<std::int64_t>(c, 1, d.max_cluster_blocks);
    c = std::min<std::int64_t>(c, std::max<std::int64_t>(1, nvec / 128));
    if (!d.clusters())
        c = 1;
    p.cluster = static_cast<int>(c);
    p.chunk_vectors = ceil_div(nvec, c);
    p.threads = std::clamp(pow2_at_least(ceil_div(p.chunk_vectors, 8)), 128, 512);
    const auto per_thread = ceil_div(p.chunk_vectors, p.threads);
    p.cache = std::min(pow2_at_least(per_thread), k_max_cache);
    p.rereads = per_thread > p.cache;
    p.dependent = dependent_launch(d);
    return p;
}

} // namespace fourfold::kernels
