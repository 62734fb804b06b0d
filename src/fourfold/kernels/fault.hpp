#pragma once
// Test-only faults on the GPU, for the isolation tests (workloads/ops/fault.cpp): a kernel that
// writes far outside its buffer (a sticky illegal-address error: the context is unusable after
// it) and a cudaMalloc larger than the card. Never called by a workload a user can list.
#include "fourfold/kernels/kernel_api.hpp"

namespace fourfold::kernels {

// Enqueues one thread that writes `value` at `data + offset` elements (an offset far beyond the
// allocation: an illegal address, reported at the next synchronisation).
launch_status launch_out_of_bounds_write(float* data, std::int64_t offset, float value,
                                         stream_t stream);

// cudaMalloc of `bytes` (freed at once when it succeeds) and the device's free and total bytes
// just before it: a request over the card is cudaErrorMemoryAllocation.
struct malloc_probe {
    launch_status status;
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
};
malloc_probe try_device_malloc(std::size_t bytes);

} // namespace fourfold::kernels
