#pragma once
// Constant padding of a tensor of up to 5 dimensions in one pass: every output element is
// written exactly once, either the input value it maps to or the constant (where stock
// constant_pad_nd on CUDA fills the whole output, then copies the input into its interior).
// Pads are non-negative (no cropping). The output is contiguous; the input may have any
// strides and any element alignment. Two paths: input rows staged through shared memory by
// cp.async (bytes in flight without registers; for 4-byte elements wherever the last dimension
// has stride 1 and a row fits a tile), else each warp an even share of the flat output, loading
// each element into registers (2-byte elements: staged they measured slower, pad_plan.cpp says
// by how much).
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

inline constexpr int k_pad_max_dims = 5;
// Output rows (of one plane: the first three of the five dimensions) a warp takes.
inline constexpr int k_pad_rows_per_warp = 8;
// Resident blocks of 256 threads an SM the kernel is compiled for (__launch_bounds__): the grid
// is one wave of them, each warp looping over its chunks.
inline constexpr int k_pad_blocks_per_sm = 5;
// The staged path (pad_staged): blocks of 128 threads, 16 resident an SM (its launch bounds),
// each one tile of about k_pad_tile_bytes of output rows of one plane.
inline constexpr int k_pad_tile_threads = 128;
inline constexpr int k_pad_tile_blocks_per_sm = 16;
inline constexpr std::int64_t k_pad_tile_bytes = std::int64_t{12} * 1024;
// An input row above this goes the register path (a tile is at least one row).
inline constexpr std::int64_t k_pad_max_staged_row_bytes = std::int64_t{32} * 1024;

// The flat path's even split (pad_flat): warp w of W takes the units [begin(w), begin(w + 1)),
// units / W each and the first units % W one more. Made on the host: the device's split was
// units x w / W, two 64-bit divisions a warp (software routines in the SASS) ahead of its first
// load.
struct pad_flat_split {
    std::uint32_t share = 0, extra = 0;
    constexpr pad_flat_split() = default;
    constexpr pad_flat_split(std::uint32_t units, std::uint32_t warps)
        : share(units / warps), extra(units % warps) {}
    [[nodiscard]] constexpr std::uint32_t begin(std::uint32_t w) const {
        return w * share + (w < extra ? w : extra);
    }
};

struct pad_args {
    const void* x = nullptr;
    void* y = nullptr;
    int dims = 0;                                // 1..5
    std::int64_t in_shape[k_pad_max_dims] = {};  // outermost first
    std::int64_t in_stride[k_pad_max_dims] = {}; // elements
    std::int64_t before[k_pad_max_dims] = {};
    std::int64_t after[k_pad_max_dims] = {};
    double value = 0;
    elem type = elem::bf16;
};

struct pad_plan {
    int vec = 1; // output elements per store (the widest the row length allows, <= 16 B)
    int threads = 256;
    std::int64_t blocks = 0;
    std::int64_t out_elements = 0;
    std::int64_t chunks = 0;           // warp tasks: k_pad_rows_per_warp rows of one plane
    std::int64_t chunks_per_plane = 0; // per plane of (last-but-one x last) output elements
    bool contiguous_rows = true;       // the input's last dimension has stride 1
    // the register path's flat split (pad_flat): each warp an even share of the output's units,
    // units_a_lane of them a lane in flight; false (FOURFOLD_PAD_FLAT=0): the chunks above
    bool flat = false;
    int units_a_lane = 0;
    std::string why_scalar;
    // the staged path: a block per tile of rows_per_tile output rows of one output plane
    bool staged = false;
    std::string why_registers; // why the staged path was not taken
    bool flat_rows = true;     // a tile's input rows are one contiguous run (one copy)
    std::int64_t rows_per_tile = 0;
    std::int64_t tiles_per_plane = 0;
    std::int64_t row_slot_bytes = 0; // shared bytes a row takes where rows are copied alone
    std::int64_t shared_bytes = 0;   // dynamic shared memory a block takes
    bool dependent_launch = false;   // programmatic dependent launch (compute capability >= 9)
    // the register path: L2 prefetches a lane issues before the dependency wait, of its warp's
    // first 8 rows of input; 0 with FOURFOLD_PAD_PREFETCH=0 (session 45's A/B), on the staged
    // path and for strided rows
    int prefetch_lines = 0;
    std::string valid;
    std::string describe() const;
};

pad_plan plan_pad(const pad_args& a, const device_limits& d);
launch_status launch_pad(const pad_plan& p, const pad_args& a, stream_t stream);

} // namespace fourfold::kernels
