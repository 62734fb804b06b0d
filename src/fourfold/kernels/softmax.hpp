#pragma once
// Softmax over the last dimension of a rows x cols matrix, in fp32/fp16/bf16, output in the
// input dtype. Numerically stable: each thread keeps a running (max, sum of exp) pair, merged
// across the warp, the block and, for long rows, a thread-block cluster (sm_90 distributed
// shared memory), so a row is read once from memory and written once in a single launch. A few
// long rows (at most k_softmax_grid_max_rows) too long for a cluster's registers are
// spread over the whole device instead: a cooperative grid whose blocks exchange their pairs
// through global memory behind a per-row barrier (a workspace of the kernel's module, so these
// launches must not run concurrently on two streams).
#include "fourfold/kernels/kernel_api.hpp"

#include <string>

namespace fourfold::kernels {

struct softmax_args {
    const void* x = nullptr;
    void* y = nullptr;
    std::int64_t rows = 0, cols = 0;
    std::int64_t ld_x = 0, ld_y = 0; // row strides in elements; columns are contiguous
    elem type = elem::f32;
};

// The grid path's limits: rows, and blocks in all (its per-row barriers and pairs).
inline constexpr int k_softmax_grid_max_rows = 8;
inline constexpr int k_softmax_grid_max_blocks = 1024;

struct softmax_plan {
    enum class path { warp_per_row, cluster_per_row, grid_per_row };
    path kind = path::cluster_per_row;
    int vec = 1;       // elements per load: 16 bytes where the pointers and strides allow
    int threads = 256; // per block
    int cluster = 1;   // blocks per row (a cluster, or the grid's share of a row)
    int cache = 1;     // vectors per thread kept in registers between the two passes
    std::int64_t chunk_vectors = 0; // vectors of a row per block
    bool rereads = false;           // part of a row is read again in the second pass (row too long)
    // a programmatic dependent launch (sm_90 on, warp and cluster paths): the next kernel may
    // launch at once, and this one prefetches its row into L2 before it waits for the last
    bool dependent = false;
    std::string why_scalar; // why vec is 1, when it is
    std::string valid;      // empty when the plan can run; else what is wrong with the arguments
    std::string describe() const;
};

softmax_plan plan_softmax(const softmax_args& a, const device_limits& d);
// The largest cluster the softmax kernels can launch on the current device: 16 where the
// non-portable size is schedulable (opting every cluster kernel in), else the portable 8.
// A host call made once per device (query_device), never inside a capture.
int softmax_cluster_limit();
launch_status launch_softmax(const softmax_plan& p, const softmax_args& a, stream_t stream);

} // namespace fourfold::kernels
