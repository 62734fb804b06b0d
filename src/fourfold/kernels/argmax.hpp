#pragma once
// Greedy pick on the device: the index of the largest of n values (the first of equal maxima; a
// NaN counts as the largest, the first NaN wins, as at::argmax does), written as an int64 into
// a token buffer at the slot *at + 1 (at a device position: the token after the current one)
// or at slot 0 when at is nullptr; then *advance is incremented when given (the decode step's
// position moved on in the same launch). Blocks reduce their slices and the last block to finish
// (a counter in the workspace) merges them and resets the counter, so one launch does it all
// and a replayed graph finds the workspace as it left it. On compute capability 9 and up a
// dependent launch: every block waits for the launch before (x, *at) before it reads or writes
// anything, so the next launch on the workspace, which waits too, finds the counter reset.
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

struct argmax_args {
    const void* x = nullptr; // n values (contiguous)
    std::int64_t n = 0;
    std::int64_t* tokens = nullptr;   // the token buffer
    const std::int64_t* at = nullptr; // device: the result goes to tokens[*at + 1]; or nullptr
    std::int64_t* advance = nullptr;  // device: incremented by 1 after the write; or nullptr
    void* workspace = nullptr;        // plan.workspace_bytes, zeroed once before first use
    elem type = elem::bf16;
};

struct argmax_plan {
    int threads = 256;
    std::int64_t blocks = 0;
    std::int64_t workspace_bytes = 0; // a counter, then (value, index) per block
    bool dependent_launch = false;    // programmatic dependent launch (compute capability >= 9)
    std::string valid;
    std::string describe() const;
};

argmax_plan plan_argmax(const argmax_args& a, const device_limits& d);
launch_status launch_argmax(const argmax_plan& p, const argmax_args& a, stream_t stream);

} // namespace fourfold::kernels
