// The host half of the constant pad: checks, vector width, grid.
#include "fourfold/kernels/pad.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace fourfold::kernels {

namespace {

// Session 38's switch for the word path (unmeasured when it landed): the next session times the
// article suite's pads with and without it and keeps one path.
bool words_requested() {
    const char* v = std::getenv("FOURFOLD_PAD_WORDS");
    return v && std::strcmp(v, "1") == 0;
}

// Why the word path cannot take these arguments ("" where it can): 2-byte elements whose rows,
// in and out, have even lengths (an output word never spans two rows), every input row starting
// 4-byte aligned (even strides outside the last dimension, an aligned base), output rows of 8
// elements or more (a unit spans at most two), whole 16-byte units at a 16-byte aligned output.
std::string why_not_words(const pad_args& a, std::int64_t width, std::int64_t total) {
    const int last = a.dims - 1;
    if (elem_bytes(a.type) != 2)
        return "the word path takes 2-byte elements";
    if (a.in_stride[last] != 1 && a.in_shape[last] > 1)
        return "the input's last dimension is strided";
    if (a.in_shape[last] % 2 != 0 || width % 2 != 0)
        return "an input or output row of odd length";
    if (width < 8)
        return "output rows under 8 elements";
    for (int i = 0; i < last; ++i)
        if (a.in_shape[i] > 1 && a.in_stride[i] % 2 != 0)
            return "an odd input stride";
    if (alignment_of(a.x) < 4 || alignment_of(a.y) < 16)
        return "the input is not 4-byte or the output not 16-byte aligned";
    if (total % 8 != 0)
        return "the output is not whole 16-byte units";
    return "";
}

} // namespace

std::string pad_plan::describe() const {
    if (words) {
        std::string s = "input words realigned by a funnel shift (2-byte elements), 16-byte "
                        "units over the flat output, 4 a thread in flight";
        s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
        if (dependent_launch)
            s += ", dependent launch";
        return s;
    }
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
    std::string s = "warp per " + std::to_string(k_pad_rows_per_warp) +
                    " output rows of a plane, lanes over their flat units, " + std::to_string(vec) +
                    " element(s) per store";
    s += ", " + std::to_string(blocks) + " block(s) of " + std::to_string(threads);
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
    if (es == 2 && words_requested()) {
        p.why_not_words = why_not_words(a, width, total);
        if (p.why_not_words.empty()) {
            p.words = true;
            p.vec = 8;
            p.why_scalar.clear();
            p.threads = 256;
            const std::int64_t units = total / 8;
            const std::int64_t per_block = std::int64_t{256} * k_pad_words_units; // a round
            p.blocks = std::max<std::int64_t>(
                1, std::min<std::int64_t>((units + per_block - 1) / per_block,
                                          std::int64_t{d.sm_count} * k_pad_words_blocks_per_sm));
            p.dependent_launch = d.cc_major >= 9;
            return p;
        }
    }
    // the staged path wherever the input's last dimension is contiguous and a row fits a tile
    const std::int64_t width_in = a.in_shape[a.dims - 1];
    const std::int64_t height =
        a.dims >= 2 ? a.in_shape[a.dims - 2] + a.before[a.dims - 2] + a.after[a.dims - 2] : 1;
    const std::int64_t planes = total / (width * height);
    if (!p.contiguous_rows && width_in > 1)
        p.why_registers = "the input's last dimension is strided";
    else if (es < 4)
        // measured: 96x5x130x130 bf16 18.8 µs staged against the register path's 13.6-14.0, and
        // slower on every bf16 case of the article suite (fp32: 22.8 µs, 82.5 % of the copy
        // bandwidth, ahead of stock on every case), H200, build 2262b7f
        p.why_registers = "2-byte elements stage slower than they load into registers";
    else if (width_in * es > k_pad_max_staged_row_bytes)
        p.why_registers = "an input row of " + std::to_string(width_in * es) + " B is over " +
                          std::to_string(k_pad_max_staged_row_bytes) + " B";
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
        p.dependent_launch = d.cc_major >= 9;
        return p;
    }
    // warp tasks: k_pad_rows_per_warp rows of one plane (the output's last two dimensions)
    p.chunks_per_plane = (height + k_pad_rows_per_warp - 1) / k_pad_rows_per_warp;
    p.chunks = planes * p.chunks_per_plane;
    // At most one wave of resident blocks, each warp looping over its chunks: a grid of 1428
    // blocks on 5 x 132 slots ran 2.16 waves, the third a sixth full (ncu, build e62084f:
    // 14.05 µs, 48 % occupancy); one wave takes the chunks in about whole rounds.
    const std::int64_t warps_per_block = p.threads / 32;
    const std::int64_t wave =
        std::max<std::int64_t>(1, std::int64_t{d.sm_count} * k_pad_blocks_per_sm);
    p.blocks = std::max<std::int64_t>(
        1, std::min<std::int64_t>((p.chunks + warps_per_block - 1) / warps_per_block, wave));
    return p;
}

} // namespace fourfold::kernels
