// The host half of the constant pad: checks, vector width, grid.
#include "fourfold/kernels/pad.hpp"

#include <algorithm>
#include <cstdlib>

namespace fourfold::kernels {
namespace {

// Lines a lane of the register path asks L2 for before its dependency wait: a warp's first 8 rows
// of 130 bf16 take 24-32 lines, one a lane. With the dependent launch (both new in session 45),
// against neither, H100 80GB HBM3, build ef51118, one machine: 96x5x130x130 bf16 16.93 -> 16.10
// µs, 128x3x64x64 7.85 -> 6.09, 192x3x64x64 10.99 -> 9.67, 384x3x32x32 8.21 -> 6.94.
// FOURFOLD_PAD_PREFETCH=0 turns the prefetch off (its share not yet measured alone).
int prefetch_lines() {
    return switch_is("FOURFOLD_PAD_PREFETCH", "0") ? 0 : 4;
}

// Units a lane of the flat path loads before it stores (B). Measured (s55_a, H100 80GB HBM3,
// build ba79a2e, article suite, µs): 8 where the wave's warps take the pad in one round of 8
// (384x3x32x32 bf16 4.93 against 5.41 at 4), else 4 (96x5x130x130 bf16 15.58 against 17.85 at
// 8; 128x3x64x64 6.49 against 7.59); 16-byte units 4 (8 would spill). FOURFOLD_PAD_UNITS_A_LANE=4
// or 8 forces it (8 for units of 8 bytes or less). 2-byte elements (each its own load, held apart
// until the round's loads are issued): 16-byte units take 2 and 8-byte units 4; so do 16-byte
// units of strided 4-byte elements (more would spill: the kernel compiles no other instance).
int units_a_lane(std::int64_t unit_bytes, std::int64_t units, std::int64_t wave_warps,
                 bool halves = false, bool strided = false) {
    if ((halves || strided) && unit_bytes > 8)
        return 2;
    if (unit_bytes > 8 || (halves && unit_bytes > 4) || switch_is("FOURFOLD_PAD_UNITS_A_LANE", "4"))
        return 4;
    if (switch_is("FOURFOLD_PAD_UNITS_A_LANE", "8"))
        return 8;
    return units <= wave_warps * 32 * 8 ? 8 : 4;
}

// The register path's one wave: k_pad_blocks_per_sm blocks of 256 threads an SM.
std::int64_t wave_blocks(const device_limits& d) {
    return std::max<std::int64_t>(1, std::int64_t{d.sm_count} * k_pad_blocks_per_sm);
}
constexpr std::int64_t k_warps_a_block = 256 / 32;

// Rounds of loads a warp of the flat register path's one wave takes (units_a_lane units a lane a
// round; contiguous 4-byte pads only ask).
std::int64_t register_rounds(std::int64_t units, std::int64_t unit_bytes, const device_limits& d) {
    const std::int64_t warps = wave_blocks(d) * k_warps_a_block;
    const std::int64_t b = units_a_lane(unit_bytes, units, warps);
    const std::int64_t share = (units + warps - 1) / warps;
    return (share + 32 * b - 1) / (32 * b);
}

// 4-byte pads take the register path up to this many rounds, the staged one past it. Measured
// (s55_c, H100 80GB HBM3, build 86de552, article suite, fp32, µs, staged against registers):
// 384x3x32x32 (1 round) 5.96 against 5.51, 128x3x64x64 (3) 8.76 against 6.82, 192x3x64x64 (4)
// 10.02 against 9.55, 96x5x130x130 (5) 29.86 against 31.69. FOURFOLD_PAD_STAGED=1 stages
// wherever the rows allow, =0 never.
constexpr std::int64_t k_pad_register_rounds = 4;

} // namespace

std::string pad_plan::describe() const {
    if (staged) {
        std::string s = "input rows staged in shared memory by cp.async, a block per " +
                        std::to_string(rows_per_tile) + " output row(s) of a plane (" +
                        std::to_string(tiles_per_plane) + " a plane), " +
                        (flat_rows ? "one copy a tile" : "one copy a row (rows not contiguous)") +
                        ", 16-byte stores";
        s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads) + ", " +
             std::to_string(shared_bytes) + " B shared";
        if (dependent_launch)
            s += ", dependent launch";
        return s;
    }
    std::string s = flat ? "each warp an even share of the flat output's units, " +
                               std::to_string(units_a_lane) +
                               " a lane loaded before they are stored, " + std::to_string(vec) +
                               " element(s) per store"
                         : "warp per " + std::to_string(k_pad_rows_per_warp) +
                               " output rows of a plane, lanes over their flat units, " +
                               std::to_string(vec) + " element(s) per store";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
    if (dependent_launch)
        s += ", dependent launch";
    if (prefetch_lines > 0)
        s += ", a warp's first rows prefetched into L2 first";
    if (!contiguous_rows)
        s += ", strided input rows";
    if (!why_scalar.empty())
        s += " (scalar: " + why_scalar + ")";
    if (!why_registers.empty())
        s += " (not staged: " + why_registers + ")";
    return s;
}

pad_plan plan_pad(const pad_args& a, const device_limits& d) {
    pad_plan p;
    if (a.dims < 1 || a.dims > k_pad_max_dims) {
        p.valid = "1 to 5 dimensions";
        return p;
    }
    std::int64_t total = 1;
    for (int i = 0; i < a.dims; ++i) {
        if (a.in_shape[i] < 1) {
            p.valid = "every input dimension must be at least 1";
            return p;
        }
        if (a.before[i] < 0 || a.after[i] < 0) {
            p.valid = "pads must be non-negative (no cropping)";
            return p;
        }
        total *= a.in_shape[i] + a.before[i] + a.after[i];
        if (total >= (std::int64_t{1} << 31)) {
            p.valid = "the output must have fewer than 2^31 elements";
            return p;
        }
    }
    p.out_elements = total;
    p.contiguous_rows = a.in_stride[a.dims - 1] == 1;
    // elements per store: the most (16 bytes at most) whose size divides the output row's
    const auto es = static_cast<std::int64_t>(elem_bytes(a.type));
    const std::int64_t width = a.in_shape[a.dims - 1] + a.before[a.dims - 1] + a.after[a.dims - 1];
    p.vec = 1;
    for (int ve = static_cast<int>(16 / es); ve > 1; ve /= 2)
        if (width % ve == 0 && alignment_of(a.y) >= ve * es) {
            p.vec = ve;
            break;
        }
    if (p.vec == 1)
        p.why_scalar =
            "the output row (" + std::to_string(width) + " elements) allows no wider store";
    if (alignment_of(a.x) < static_cast<int>(es)) {
        p.valid = "the input is not aligned to its element size";
        return p;
    }
    // the staged path wherever the input's last dimension is contiguous and a row fits a tile
    const std::int64_t width_in = a.in_shape[a.dims - 1];
    const std::int64_t height =
        a.dims >= 2 ? a.in_shape[a.dims - 2] + a.before[a.dims - 2] + a.after[a.dims - 2] : 1;
    const std::int64_t planes = total / (width * height);
    if (!p.contiguous_rows && width_in > 1)
        p.why_registers = "the input's last dimension is strided";
    else if (switch_is("FOURFOLD_PAD_STAGED", "0"))
        p.why_registers = "FOURFOLD_PAD_STAGED=0"; // session 55's A/B of 4-byte pads
    else if (es < 4)
        // measured: 96x5x130x130 bf16 18.8 µs staged against the register path's 13.6-14.0, and
        // slower on every bf16 case of the article suite (fp32: 22.8 µs, 82.5 % of the copy
        // bandwidth, ahead of stock on every case), H200, build 2262b7f. Input words realigned
        // by a funnel shift into 16-byte output units over the flat output (pad_words, session
        // 38) lost too: 96x5x130x130 13.8 -> 18.9-19.1 µs, 384x3x32x32 7.27 -> 7.7, 128x3x64x64
        // 6.9 -> 7.7; it won only 192x3x64x64 (10.0 -> 7.8). Removed (H200, a7ed76d).
        p.why_registers = "2-byte elements stage slower than they load into registers";
    else if (width_in * es > k_pad_max_staged_row_bytes)
        p.why_registers = "an input row of " + std::to_string(width_in * es) + " B is over " +
                          std::to_string(k_pad_max_staged_row_bytes) + " B";
    else if (const std::int64_t r = register_rounds(p.out_elements / p.vec, p.vec * es, d);
             r <= k_pad_register_rounds && !switch_is("FOURFOLD_PAD_STAGED", "1"))
        p.why_registers = "the register path takes it in " + std::to_string(r) +
                          " round(s) of loads a warp (staged from " +
                          std::to_string(k_pad_register_rounds + 1) + ")";
    if (p.why_registers.empty()) {
        p.staged = true;
        const std::int64_t height_in = a.dims >= 2 ? a.in_shape[a.dims - 2] : 1;
        p.flat_rows = height_in == 1 || (a.dims >= 2 && a.in_stride[a.dims - 2] == width_in);
        // a row copied alone starts at its own address mod 16 in its slot
        p.row_slot_bytes = (width_in * es + 15 + 15) / 16 * 16;
        const std::int64_t staged_row = p.flat_rows ? width_in * es : p.row_slot_bytes;
        // about k_pad_tile_bytes of output (or staged input) a tile, the plane's rows cut evenly
        const std::int64_t most =
            std::max<std::int64_t>(1, k_pad_tile_bytes / std::max(width * es, staged_row));
        p.tiles_per_plane = (height + most - 1) / most;
        p.rows_per_tile = (height + p.tiles_per_plane - 1) / p.tiles_per_plane;
        const std::int64_t rows_in = std::min(p.rows_per_tile, height_in);
        // 16 guard bytes, 15 of misalignment (flat), the rows, 48 guard bytes (pad.cu)
        p.shared_bytes = (16 + (p.flat_rows ? 15 : 0) + rows_in * staged_row + 48 + 15) / 16 * 16;
        p.threads = k_pad_tile_threads;
        p.blocks = planes * p.tiles_per_plane;
        p.vec = static_cast<int>(16 / es);
        p.why_scalar.clear();
        p.dependent_launch = dependent_launch(d);
        // (no prefetch before the wait here: session 45 measured the fp32 pads with a prefetch of
        // each tile's rows and the dependent launch against neither, H100 80GB HBM3, build
        // ef51118: 128x3x64x64 7.54 -> 8.73 µs, 192x3x64x64 10.03 -> 9.93, 384x3x32x32 6.78 ->
        // 5.87, 96x5x130x130 31.16 -> 30.38, 1.01x together; the prefetch's own share unknown, so
        // the staged path stays as it was)
        return p;
    }
    // warp tasks: k_pad_rows_per_warp rows of one plane (the output's last two dimensions)
    p.chunks_per_plane = (height + k_pad_rows_per_warp - 1) / k_pad_rows_per_warp;
    p.chunks = planes * p.chunks_per_plane;
    // At most one wave of resident blocks, each warp looping over its chunks: a grid of 1428
    // blocks on 5 x 132 slots ran 2.16 waves, the third a sixth full (ncu, build e62084f:
    // 14.05 µs, 48 % occupancy); one wave takes the chunks in about whole rounds.
    const std::int64_t warps_per_block = p.threads / 32;
    const std::int64_t wave = wave_blocks(d);
    p.blocks = std::max<std::int64_t>(
        1, std::min<std::int64_t>((p.chunks + warps_per_block - 1) / warps_per_block, wave));
    // the flat path (FOURFOLD_PAD_FLAT=0 keeps the chunks of rows): one wave at most, a warp for
    // every round of 32 x units_a_lane units there is
    // (32-bit offsets in a plane, pad.cu's flat_params: an input row's and column's offsets, with
    // a step's overshoot of up to 33 rows, under 2^31 elements)
    const int last = a.dims - 1;
    const std::int64_t row_stride = a.dims >= 2 ? std::abs(a.in_stride[last - 1]) : 0;
    const bool offsets_fit =
        (height + 34) * row_stride + (width + 16) * std::abs(a.in_stride[last]) <
        (std::int64_t{1} << 31);
    p.flat = offsets_fit && !switch_is("FOURFOLD_PAD_FLAT", "0");
    if (p.flat) {
        const std::int64_t units = p.out_elements / p.vec;
        p.units_a_lane =
            units_a_lane(p.vec * es, units, wave * warps_per_block, es == 2, !p.contiguous_rows);
        const std::int64_t round = std::int64_t{32} * p.units_a_lane; // units a warp a round
        const std::int64_t rounds = (units + round - 1) / round;
        p.blocks = std::max<std::int64_t>(
            1, std::min<std::int64_t>((rounds + warps_per_block - 1) / warps_per_block, wave));
    }
    p.dependent_launch = dependent_launch(d);
    p.prefetch_lines = p.contiguous_rows ? prefetch_lines() : 0;
    return p;
}

} // namespace fourfold::kernels
