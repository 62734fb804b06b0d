// The host half of the decode GEMV: rows per warp, split-K, grid.
#include "fourfold/kernels/gemv.hpp"

#include <algorithm>
#include <cmath>

namespace fourfold::kernels {

bool cs_fetch_first(bool fused_norm) {
    return fused_norm && !switch_is("FOURFOLD_GEMV_CS_FETCH_FIRST", "0");
}

std::string gemv_plan::describe() const {
    std::string s =
        tensor_cores        ? "tensor cores (m16n8k16), 16-byte loads"
        : column_stationary ? "16-byte loads, a warp a 1 KB slice of K down a run of rows (x in "
                              "registers)"
        : claimed           ? "16-byte loads, 2 KB steps claimed by a block's warps"
        : balanced          ? "16-byte loads, rows split evenly over each block's warps"
        : streamed          ? (persistent ? "16-byte loads, persistent, rows streamed back to back"
                                          : "16-byte loads, streamed, a block per 8 row groups")
        : vectorised        ? "16-byte loads"
                            : "scalar loads";
    s += ", " + std::to_string(rows_per_warp) + " row(s)/warp";
    if (mma_rounds > 0)
        s += ", " + std::to_string(mma_rounds) + " tile round(s)/block";
    if (column_stationary)
        s += ", " + std::to_string(slices) + " slice(s)/row, " + std::to_string(cs_l2_rows) +
             " row(s) a slice asked of L2 first";
    if (swiglu_slices)
        s += ", SwiGLU made by each warp for its slice";
    if (cs_fetch_first)
        s += ", the first rows' weights loaded before the norm";
    if (epilogue_prefetch)
        s += ", the epilogue's bias fetched at the start";
    s += ", split-K " + std::to_string(k_split) + " warp(s)/row group";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
    if (dependent_launch)
        s += ", dependent launch";
    if (fused_norm)
        s += ", RMSNorm fused";
    if (fused_swiglu)
        s += ", SwiGLU fused";
    if (!why_scalar.empty())
        s += " (scalar: " + why_scalar + ")";
    return s;
}

bool cs_half_wanted(std::int64_t slices) {
    constexpr int half_warps = k_gemv_cs_threads / 64;
    return slices >= 1 && half_warps % slices == 0 && switch_is("FOURFOLD_GEMV_CS_HALF", "1");
}

int cs_l2_rows(const gemv_cs_shape& s) {
    if (switch_is("FOURFOLD_GEMV_CS_L2_RUN", "0"))
        return 0;
    return static_cast<int>(std::min<std::int64_t>(k_gemv_cs_depth, s.run_rows));
}

gemv_cs_shape gemv_cs_shape_of(std::int64_t n, std::int64_t nkv, int sm_count, bool half) {
    constexpr std::int64_t slice_vectors = std::int64_t{32} * k_gemv_cs_vectors;
    const int warps = k_gemv_cs_threads / (half ? 64 : 32);
    gemv_cs_shape s;
    s.slices = (nkv + slice_vectors - 1) / slice_vectors;
    s.blocks = std::int64_t{sm_count} * (half ? 2 : 1);
    s.threads = warps * 32;
    const std::int64_t runs = s.slices <= warps ? s.blocks * (warps / s.slices) : 0;
    s.runs = runs;
    s.run_rows = runs ? (n + runs - 1) / runs : 0;
    s.sum_bytes = warps * s.run_rows * 4;
    return s;
}

gemv_cs_shape gemv_cs_shape_planned(std::int64_t n, std::int64_t nkv, int sm_count) {
    const auto whole = gemv_cs_shape_of(n, nkv, sm_count);
    return cs_half_wanted(whole.slices) ? gemv_cs_shape_of(n, nkv, sm_count, true) : whole;
}

gemv_mma_rounds_shape gemv_mma_rounds_shape_of(std::int64_t n, std::int64_t k, int sm_count) {
    const std::int64_t tiles = (n + 15) / 16, kblocks = k / 32;
    gemv_mma_rounds_shape best;
    std::int64_t best_warps = 0;
    for (int ks = 1; ks <= 8 && ks <= kblocks; ++ks) {
        const std::int64_t per_sm = std::min(32, 8 * k_gemv_mma_blocks_per_sm / ks);
        const std::int64_t slots = std::int64_t{sm_count} * per_sm;
        const std::int64_t rounds = (tiles + slots - 1) / slots;
        const std::int64_t blocks = (tiles + rounds - 1) / rounds;
        if (blocks * ks > best_warps) {
            best_warps = blocks * ks;
            best = {ks, rounds, blocks};
        }
    }
    return best;
}

namespace {
// One token's rows of at least this many bytes take a kernel of one block an SM (column-stationary
// for 2-byte elements, else claimed); shorter rows keep the static partition (plan_gemv, below).
constexpr std::int64_t k_one_block_an_sm_row_bytes = 8192;
// The claimed kernel's most rows a block under the trial FOURFOLD_GEMV_CLAIM_ROW_CAP=1 (below).
constexpr std::int64_t k_gemv_claim_cap_rows = 1024;

// The column-stationary kernel's rule for one token of 2-byte elements (plan_gemv, below). The
// trial FOURFOLD_GEMV_CS_BIG=1 (session 44, not yet measured in a decode) takes it for rows of 4
// KB or more too where the weights are 64 MB or more: under ncu (one launch alone, H200, build
// 16e6989) qwen3-30b-a3b's LM head (151,936 x 2048 + the final norm) ran 156.8 µs static and
// 143.8 column-stationary, while its 5120 x 2048 qkv GEMVs, 12.3 and 12.1 µs alone, cost the
// decode 3.5 % column-stationary (session 43): a loss between launches (the kernels alone are
// not slower), which a 150 µs kernel pays once a step and a 12 µs one 48 times.
bool column_stationary_wanted(std::int64_t row_bytes, std::int64_t weight_bytes, bool prologue) {
    if (switch_is("FOURFOLD_GEMV_CS", "0"))
        return false;
    if (switch_is("FOURFOLD_GEMV_CS", "1"))
        return true;
    if (row_bytes >= k_one_block_an_sm_row_bytes)
        return true;
    // Rows of 4 KB or more without a fused prologue (session 48's default;
    // FOURFOLD_GEMV_CS_PLAIN=0: the static partition). Measured on the H200 (build 5d27b71, one
    // call, cold graph, native against stock in the same run): 8192 x 2048 11.7 -> 9.23 µs (stock
    // 10.4), 4096 x 2048 7.37 -> 5.53 (6.84), 6144 x 2048 9.39 -> 8.15 (9.18), 8192 x 3072 16.4 ->
    // 12.9 (14.5), 4096 x 2560 8.57 -> 7.67 (7.94). The decode loss above was measured on
    // norm-fused GEMVs (qwen3's qkv and LM head: -2.9 % at ctx 512 in that call); the native_fused
    // decodes have no rows of 4-8 KB without a prologue. The unfused native variant's qwen3 qkv
    // and LM head are such rows (not yet measured with this rule).
    if (!prologue && row_bytes >= k_one_block_an_sm_row_bytes / 2 &&
        !switch_is("FOURFOLD_GEMV_CS_PLAIN", "0"))
        return true;
    // Plain rows of 3 KB or more too, and of 2 KB or more where the weights are 64 MB or more (the
    // default since session 50; FOURFOLD_GEMV_CS_PLAIN_SHORT=0 turns it off, and
    // FOURFOLD_GEMV_CS_PLAIN=0 with the rule above). On an H100 (session 50, build e36f3d9, one
    // call, cold graph, static -> column-stationary): 4096 x 1536 6.68 -> 5.63 µs, 8192 x 1536 10.9
    // -> 9.48, 32768 x 1024 23.6 -> 22.0, 151936 x 1024 107 -> 101; but the small 2 KB rows lost
    // (3072 x 1024 4.34 -> 5.45, 4096 x 1024 4.92 -> 5.96), hence the 64 MB. The rule as coded,
    // build 534c6e3, one call: 6 such shapes 1.06x -> 1.15x over stock (4096 x 1536 5.61, 8192 x
    // 1536 9.45, 32768 x 1024 21.9, 151936 x 1024 101 µs; the small 2 KB rows as before). Not yet
    // timed on an H200.
    if (!prologue && !switch_is("FOURFOLD_GEMV_CS_PLAIN", "0") &&
        !switch_is("FOURFOLD_GEMV_CS_PLAIN_SHORT", "0") &&
        (row_bytes >= 3072 || (row_bytes >= 2048 && weight_bytes >= (std::int64_t{64} << 20))))
        return true;
    // Rows whose last 2 KB step of the static partition is under half full (K = 1152: 2304 bytes,
    // a second step of 256), where that step's loads leave most of a warp's lanes idle (session
    // 47's trial, the default from session 48; FOURFOLD_GEMV_CS_TAIL=0: the static partition).
    // Session 47's article run (H200, 2f0cf2c): 262,144 x 1152 at 3.48 TB/s (0.83x of stock),
    // 6912 x 1152 0.90x. Session 48 (H100, one call, 75977de, cold graph): 262,144 x 1152 203 ->
    // 195 µs (stock 202), 6912 x 1152 8.01 -> 7.29 (stock 7.87). No model whose decode fourfold
    // runs has such rows.
    const std::int64_t tail = row_bytes % 2048;
    if (!switch_is("FOURFOLD_GEMV_CS_TAIL", "0") && tail > 0 && tail < 1024)
        return true;
    return switch_is("FOURFOLD_GEMV_CS_BIG", "1") && row_bytes >= k_one_block_an_sm_row_bytes / 2 &&
           weight_bytes >= (std::int64_t{64} << 20);
}
} // namespace

bool take_epilogue_prefetch(std::int64_t& shared_bytes, std::int64_t bytes, bool wanted) {
    if (!wanted || shared_bytes + bytes > k_gemv_norm_max_shared_bytes ||
        switch_is("FOURFOLD_GEMV_EPILOGUE_PREFETCH", "0"))
        return false;
    shared_bytes += bytes;
    return true;
}

namespace {
// A fused prologue's checks and its x in shared memory (T x K elements), for the balanced and
// column-stationary paths: false with p.valid set where the arguments are wrong.
bool take_prologue(gemv_plan& p, const gemv_args& a, std::int64_t es) {
    if (!a.norm_weight && !a.swiglu_x)
        return true;
    if (a.norm_weight && a.swiglu_x) {
        p.valid = "one prologue at a time: a fused RMSNorm or a fused SwiGLU";
        return false;
    }
    if (a.norm_weight && alignment_of(a.norm_weight) < 16) {
        p.valid = "a fused RMSNorm's weight must be 16-byte aligned";
        return false;
    }
    if (a.norm_weight && !(a.norm_eps >= 0)) {
        p.valid = "a fused RMSNorm's eps must be >= 0";
        return false;
    }
    if (a.swiglu_x && a.ld_x < 2 * a.k) {
        p.valid = "a fused SwiGLU reads [gate | up] rows of 2K elements: ld_x must be >= 2K";
        return false;
    }
    const std::int64_t bytes = a.tokens * a.k * es;
    if (bytes > k_gemv_norm_max_shared_bytes) {
        p.valid = std::string("a fused ") + (a.swiglu_x ? "SwiGLU" : "RMSNorm") +
                  " keeps T x K elements in shared memory, at most " +
                  std::to_string(k_gemv_norm_max_shared_bytes) + " bytes; " +
                  std::to_string(bytes) + " here: run it on its own";
        return false;
    }
    p.fused_norm = a.norm_weight != nullptr;
    p.fused_swiglu = a.swiglu_x;
    p.shared_bytes = bytes;
    return true;
}

// The column-stationary kernel (gemv_cs.cuh) for one token, where a float a row of each warp's
// run fits beside the prologue's x (p.shared_bytes) and every run has `min_rows` rows or more
// (runs differ by one row at most); false (p unchanged) where it does not.
bool take_column_stationary(gemv_plan& p, const gemv_args& a, std::int64_t nkv,
                            const device_limits& d, std::int64_t min_rows) {
    const auto cs_shape = gemv_cs_shape_planned(a.n, nkv, d.sm_count);
    const std::int64_t x_bytes = a.swiglu_x ? 0 : p.shared_bytes; // per-warp SwiGLU
    const std::int64_t bytes = x_bytes + cs_shape.sum_bytes;
    if (cs_shape.runs < 1 || a.n / cs_shape.runs < std::max<std::int64_t>(min_rows, 1) ||
        bytes > k_gemv_norm_max_shared_bytes)
        return false;
    p.column_stationary = true;
    p.balanced = false;
    p.streamed = false;
    p.k_split = 1;
    p.rows_per_warp = 1;
    p.blocks = cs_shape.blocks;
    p.threads = cs_shape.threads;
    p.slices = static_cast<int>(cs_shape.slices);
    p.slice_rows = static_cast<int>(cs_shape.run_rows);
    p.swiglu_slices = a.swiglu_x;
    p.cs_fetch_first = cs_fetch_first(p.fused_norm);
    p.cs_l2_rows = cs_l2_rows(cs_shape);
    p.shared_bytes = bytes;
    p.epilogue_prefetch =
        take_epilogue_prefetch(p.shared_bytes, k_gemv_cs_epilogue_bytes, a.bias != nullptr);
    return true;
}
} // namespace

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
    // FOURFOLD_GEMV_DEPENDENT_LAUNCH=0 (a diagnostic for A/B runs, session 44): every GEMV of this
    // plan launched after the kernel before it has ended, no overlap (the kernels wait for nothing
    // then: griddepcontrol.wait returns at once). Where a kernel loses between launches but not
    // alone (qwen3-30b-a3b's column-stationary K = 2048 GEMVs, session 44's ncu), this says
    // whether the overlap is where it loses.
    p.dependent_launch = dependent_launch(d) && !switch_is("FOURFOLD_GEMV_DEPENDENT_LAUNCH", "0");
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
    // The dependent launch won 1.1-1.5 us a call on the FMA paths and lost 1.3 us on the
    // tensor-core one (8 x 4096 x 4096: 11.0 -> 12.3 us, H200, builds dd5c95c and a4a457f): off
    // there, cause not isolated.
    if (p.tensor_cores)
        p.dependent_launch = false;
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
           units >= 2 * std::int64_t{p.k_split}) {
        p.k_split *= 2;
        const std::int64_t per_block = 8 / p.k_split;
        p.blocks = (groups + per_block - 1) / per_block;
    }
    // In rounds (gemv_mma_rounds): one wave whatever N is, where the weights are 64 MiB or more.
    // Measured on the H200 (session 46, build d0f16de, stage native_tokens's 16 shapes at 2, 4
    // and 8 tokens, one machine, every record PASS): against gemv_mma the 21 cases of 60 MiB or
    // more 1.057x together (128,256 x 4096 290.4 / 286.2 / 283.0 -> 256.2 / 256.4 / 257.6 µs,
    // 17,408 x 5120 53.3 -> 48.2, 8192 x 8192 39.3 -> 36.8, 4096 x 14,336 34.4 -> 32.3), the 27
    // below it 0.94x (1024 x 1024 2.96 -> 3.20, 4096 x 4096 10.73 -> 11.08, 5120 x 5120 (50 MiB)
    // 15.81 -> 16.38): a part-wave grid of gemv_mma's is no loss where it is one round.
    // FOURFOLD_GEMV_MMA_ROUNDS=0: never; =1: at every size (session 44's trial rule). Launched
    // dependent it lost (session 46: 0.933x over 32 cases, 4096 x 4096 10.85 -> 14.61 µs): serial,
    // as gemv_mma.
    // (The kernel counts rows, tiles and a block's steps in 32 bits.)
    const bool rounds_wanted = !switch_is("FOURFOLD_GEMV_MMA_ROUNDS", "0") &&
                               (switch_is("FOURFOLD_GEMV_MMA_ROUNDS", "1") ||
                                a.n * a.k * es >= k_gemv_mma_rounds_min_bytes);
    const auto r = p.tensor_cores && rounds_wanted ? gemv_mma_rounds_shape_of(a.n, a.k, d.sm_count)
                                                   : gemv_mma_rounds_shape{};
    if (r.rounds > 0 && a.n < (std::int64_t{1} << 30) &&
        r.rounds * (a.k / 32 / r.ks / 2 + 1) < (std::int64_t{1} << 31)) {
        p.mma_rounds = static_cast<int>(r.rounds);
        p.k_split = r.ks;
        p.blocks = r.blocks;
        p.threads = 32 * r.ks;
        p.unroll = 2;
        p.shared_bytes = r.ks > 1 ? std::int64_t{2} * r.ks * 32 * 16 : 0;
    }
    // From 4 rows a block of the wave on, with rows of 2 KB or more: the rows split evenly over
    // each block's warps (gemv_balanced). With rows as the unit of work the grid's last round
    // of rows is what costs: 5120 rows on the 4224 resident warps take two row times where 1.21
    // would do (measured, build e62084f: 5120x25600 at 0.83x of cuBLAS; 14336x4096 at 0.91x,
    // build 17d18e8). Splitting K in 2 or 4 by a cost model of that last round (834ac6a) won
    // back 4-12 % on four shapes and lost 3 % on a fifth: its units were still whole halves or
    // quarters of rows. Balanced runs differ by one 2 KB step a warp at most, and by one row a
    // block of eight warps.
    const std::int64_t nkv_all = p.vectorised ? a.k / vw : 0;
    const double block_steps = (static_cast<double>(a.n) / capacity + 1) *
                               std::ceil(static_cast<double>(nkv_all) / 128); // int in-kernel
    const bool whole_steps =
        p.vectorised && !p.tensor_cores && nkv_all >= 128 && block_steps < 2147483647.0;
    const bool one_token_cs =
        a.tokens == 1 && es == 2 &&
        column_stationary_wanted(nkv_all * 16, a.n * nkv_all * 16, a.norm_weight || a.swiglu_x);
    // Below the balanced path's 4 rows a block of the wave (where K would be split over a block's
    // warps): the column-stationary kernel too, with 4 rows a run or more. Measured on the H200
    // (session 46, build d0f16de, one machine, every record PASS; with 2 rows a run or more, the
    // trial's rule): the split shapes of 8 KB rows and longer 2048 x 4096 6.81 -> 5.71 µs, 1536 x
    // 4096 6.45 -> 5.42, 1152 x 6912 9.09 -> 6.73, 2048 x 8192 11.35 -> 9.27, 1024 x 8192 6.90 ->
    // 5.69, but 1024 x 4096 (3-4 rows a run of its 264) 4.17 -> 5.31; qwen3-30b-a3b native_fused,
    // whose o GEMV is 2048 x 4096 + the residual, 344.2 / 335.8 -> 350.2 / 336.0 tokens/s at ctx
    // 512 / 2048. FOURFOLD_GEMV_CS_FEW=0: off (K split, gemv_vec, as before).
    if (whole_steps && static_cast<double>(a.n) < 4 * capacity && one_token_cs &&
        !switch_is("FOURFOLD_GEMV_CS_FEW", "0")) {
        gemv_plan q = p;
        if (!take_prologue(q, a, es))
            return q;
        if (take_column_stationary(q, a, nkv_all, d, 4))
            return q;
    }
    if (whole_steps && static_cast<double>(a.n) >= 4 * capacity) {
        p.balanced = true;
        p.streamed = true;
        p.k_split = 1;
        p.rows_per_warp = 1;
        p.unroll = 4;
        p.blocks = static_cast<std::int64_t>(capacity);
        if (!take_prologue(p, a, es))
            return p;
        // One token of 2-byte elements with rows of 8 KB or more, K at most 16 slices of 1 KB:
        // the column-stationary kernel (gemv_cs.cuh) where a float a row of each warp's run fits
        // beside the prologue's x. Measured on the H200 (session 43, build 2ea9b86, against the
        // claimed kernel, every record PASS): llama3-8b native_fused 244.8 -> 254.2 tokens/s at
        // ctx 512 (234.9 -> 245.3 at 2048), 6144 x 4096 + norm 15.7 -> 13.1 µs, 4096 x 4096 +
        // bias 11.6 -> 9.17, 28672 x 4096 + norm 55.4 -> 53.3, the LM head 232 -> 230 (session
        // 44, one machine: 245.0 -> 254.2 / 234.9 -> 245.9). Rows of 4 KB lost as the claimed
        // kernel's did (session 36): qwen3-30b-a3b 342.3 -> 330.4 with its two K = 2048 GEMVs
        // (each after the MoE block) column-stationary, though 5120 x 2048 + norm alone went 9.18
        // -> 8.59 µs, and under ncu neither is slower alone (session 44): the loss is between
        // launches. FOURFOLD_GEMV_CS=0: never (the claimed or the static partition as before);
        // =1: at any row length (the trial's rule).
        if (one_token_cs && take_column_stationary(p, a, nkv_all, d, 1))
            return p;
        // One token with rows of 8 KB or more: the steps claimed at run time by one block of 32
        // warps an SM (gemv_claim), where a float a step of the largest block's rows fits beside
        // the prologue's x. Measured on the H200 (session 36, build da84dc5, against this
        // partition): llama3-8b native_fused 228.9 -> 240.6 tokens/s at ctx 512 (220.6 -> 228.3
        // at 2048), 28672 x 4096 + norm 58.9 -> 56.7 µs, the LM head 247 -> 241; but qwen3-30b-a3b
        // lost 342.1 -> 334.0 with its two K = 2048 GEMVs (4 KB rows, each after the MoE block)
        // claimed, though 5120 x 2048 + norm alone went 9.30 -> 9.14 µs: not isolated, so rows
        // under 8 KB keep the static partition.
        // The trial FOURFOLD_GEMV_CLAIM_ROW_CAP=1 (session 51, unmeasured) keeps blocks of more
        // than k_gemv_claim_cap_rows rows on this static partition: in session 51's article run
        // (H200, ad6584d) the claimed kernel's two shapes of more than 1,024 rows a block ran
        // 3.83 TB/s (262,208 x 5376: 737 µs against stock's 659) and 4.00 (151,936 x 5120: 389
        // against 372), its 972-row 128,256 x 8192 4.46; this partition's 262,208 x 3840 4.30.
        const std::int64_t claim_rows = (a.n + d.sm_count - 1) / d.sm_count;
        const bool row_cap =
            claim_rows > k_gemv_claim_cap_rows && switch_is("FOURFOLD_GEMV_CLAIM_ROW_CAP", "1");
        if (a.tokens == 1 && nkv_all * 16 >= k_one_block_an_sm_row_bytes && !row_cap) {
            const std::int64_t rows = claim_rows;
            const std::int64_t slots = rows * ((nkv_all + 127) / 128) * 4;
            if (p.shared_bytes + slots <= k_gemv_norm_max_shared_bytes) {
                p.claimed = true;
                p.blocks = d.sm_count;
                p.threads = k_gemv_claim_threads;
                p.shared_bytes += slots;
                // the epilogue's bias fetched at the start (gemv.hpp)
                p.epilogue_prefetch = take_epilogue_prefetch(
                    p.shared_bytes, k_gemv_claim_epilogue_bytes, a.bias != nullptr);
            }
        }
        return p;
    }
    if (a.norm_weight || a.swiglu_x) {
        p.valid = std::string("a fused ") + (a.swiglu_x ? "SwiGLU" : "RMSNorm") +
                  " takes the balanced path only (16-byte rows of 2 KB or more, one token at "
                  "least 4 rows a block of the wave, no tensor cores): run it on its own";
        return p;
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
        p.persistent = static_cast<double>(row_groups) >= 2 * capacity * 8; // resident warps
        p.blocks = p.persistent ? static_cast<std::int64_t>(capacity) : one_per_warp;
    }
    // (K split, gemv_vec: nothing asked of L2 before the wait. Its first two steps and its bias's
    // line asked for there won 1.038x over 23 shapes under 8 MiB on an H100 (session 45) and lost
    // on the H200, 0.989x over the article's 35 split shapes (1024 x 1024 2.41 -> 2.64 µs; session
    // 46, build d0f16de): removed.)
    return p;
}

} // namespace fourfold::kernels
