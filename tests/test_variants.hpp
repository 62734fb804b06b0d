#pragma once
// Test-only variants, compiled into the test binaries and never offered by the CLI. Each wraps a
// workload's `stock` variant to break one thing on purpose, so the ledgers can be shown to see it.
#include <cstdint>

namespace fourfold::testing {

inline constexpr std::int64_t k_outside_bytes = 1ll << 30; // 1 GiB
inline constexpr int k_outside_hold_ms = 30;

// For every workload with a `stock` variant, registers:
//   wrong_one_element  - the largest-magnitude output element off by +1 %
//   bf16_rounded       - the stock result rounded through bf16 (where fp32 was due)
//   nan_one            - one output element NaN
//   outside_allocator  - holds 1 GiB outside the tensor allocator during the call (mmap on the
//                        CPU, cudaMalloc on CUDA), touched, for k_outside_hold_ms
//   malloc_outside     - the same with plain malloc on the CPU (malloc's own level sees it)
//   native_scale       - stock, then fourfold's native scale kernel with alpha 1 (CUDA only)
//   native_scale_off   - the same with alpha 1.01: must FAIL correctness
void register_test_variants();

} // namespace fourfold::testing
