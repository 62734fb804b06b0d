#pragma once
// Constant padding of a tensor of up to 5 dimensions in one pass: every output element is
// written exactly once, either the input value it maps to or the constant (where stock
// constant_pad_nd on CUDA fills the whole output, then copies the input into its interior).
// Pads are non-negative (no cropping). The output is contiguous; the input may have any
// strides and any element alignment.
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

inline constexpr int k_pad_max_dims = 5;
// Output rows (of one plane: the first three of the five dimensions) a warp takes.
inline constexpr int k_pad_rows_per_warp = 8;
// Resident blocks of 256 threads an SM the kernel is compiled for (__launch_bounds__): the grid
// is one wave of them, each warp looping over its chunks.
inline constexpr int k_pad_blocks_per_sm = 5;

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
    std::string why_scalar;
    std::string valid;
    std::string describe() const;
};

pad_plan plan_pad(const pad_args& a, const device_limits& d);
launch_status launch_pad(const pad_plan& p, const pad_args& a, stream_t stream);

} // namespace fourfold::kernels
