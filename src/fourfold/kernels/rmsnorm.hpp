#pragma once
// RMSNorm of the rows of a rows x cols matrix, with the residual add fused in front of it:
//   out = x (+ residual), rounded to the element type (the residual stream as it is stored),
//   normed = out / sqrt(mean(out^2) + eps) * weight, in fp32, rounded once.
// Both are written (out may be nullptr when nobody needs it). x's rows may be gathered by a
// device-side index (the embedding lookup of a decode step: row r of x is table row
// index[*at + r]), so the step that reads its token from the device needs no host value. One
// block a row: a decoder's hidden state (4096 elements) or, as rows = heads, Qwen3's per-head
// q/k norm. The row stays in registers between the sum of squares and the scaling. On compute
// capability 9 and up a dependent launch: the weight goes to L2 before the wait, x, the residual,
// the index and *at are read after it.
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

inline constexpr int k_rmsnorm_max_per_thread = 16; // elements a thread keeps in registers

struct rmsnorm_args {
    const void* x = nullptr;        // rows x cols (row stride ld_x), or the table rows gather from
    const void* residual = nullptr; // rows x cols (ld_residual), or nullptr
    const void* weight = nullptr;   // cols
    void* out = nullptr;            // rows x cols (ld_out): x (+ residual); nullptr: not written
    void* normed = nullptr;         // rows x cols (ld_normed)
    // Gather: when index is set, row r of x is row index[*at + r] of the table x (at may be
    // nullptr: index[r]). Indices outside 0..gather_rows-1 read nothing and write zeros.
    const std::int64_t* index = nullptr;
    const std::int64_t* at = nullptr;
    std::int64_t gather_rows = 0;
    std::int64_t rows = 0, cols = 0;
    std::int64_t ld_x = 0, ld_residual = 0, ld_out = 0, ld_normed = 0;
    double eps = 1e-6;
    elem type = elem::bf16;
};

struct rmsnorm_plan {
    int threads = 0;    // a block a row
    int per_thread = 0; // elements of a row each thread holds
    std::int64_t blocks = 0;
    bool dependent_launch = false; // programmatic dependent launch (compute capability >= 9)
    std::string valid; // empty when the plan can run; else what is wrong with the arguments
    std::string describe() const;
};

rmsnorm_plan plan_rmsnorm(const rmsnorm_args& a, const device_limits& d);
launch_status launch_rmsnorm(const rmsnorm_plan& p, const rmsnorm_args& a, stream_t stream);

} // namespace fourfold::kernels
