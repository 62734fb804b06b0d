#pragma once
// A tracking wrapper around libtorch's CPU allocator: live bytes and their peak, for the
// memory ledger's "allocated" level on the CPU. Installed once, process-wide.
#include <cstdint>

namespace fourfold::backend {

struct cpu_allocator_counts {
    std::int64_t current = 0;
    std::int64_t peak = 0;
};

// Installs the wrapper (idempotent); false with no effect if libtorch refuses it.
bool install_cpu_allocator_tracker();
bool cpu_allocator_tracker_installed();
cpu_allocator_counts cpu_allocator_counts_now();
void cpu_allocator_reset_peak();

} // namespace fourfold::backend
