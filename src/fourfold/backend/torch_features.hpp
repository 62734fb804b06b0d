#pragma once
// What the libtorch this was built against can do, decided at build time (TORCH_COMPAT.md).
// Per-operator headers (ATen/ops/<op>.h) exist from 1.13 on, so their presence names an op
// exactly; version gates are used only where an op exists but its signature changed.
#include <torch/version.h>

#define FOURFOLD_TORCH_AT_LEAST(major, minor)                                                      \
    (TORCH_VERSION_MAJOR > (major) ||                                                              \
     (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if __has_include(<c10/util/Float8_e4m3fn.h>)
#define FOURFOLD_HAS_FLOAT8 1
#else
#define FOURFOLD_HAS_FLOAT8 0
#endif

#if __has_include(<ATen/ops/_grouped_mm.h>)
#define FOURFOLD_HAS_GROUPED_MM 1
#else
#define FOURFOLD_HAS_GROUPED_MM 0
#endif

// _scaled_mm exists from 2.1 but took its current (a, b, scale_a, scale_b, ...) form in 2.5.
#if __has_include(<ATen/ops/_scaled_mm.h>) && FOURFOLD_TORCH_AT_LEAST(2, 5)
#define FOURFOLD_HAS_SCALED_MM 1
#else
#define FOURFOLD_HAS_SCALED_MM 0
#endif

#if __has_include(<ATen/ops/scaled_dot_product_attention.h>)
#define FOURFOLD_HAS_SDPA 1
#else
#define FOURFOLD_HAS_SDPA 0
#endif

// StatType moved from c10::cuda::CUDACachingAllocator to c10::CachingAllocator in 2.x.
#if FOURFOLD_TORCH_AT_LEAST(2, 1)
#define FOURFOLD_CACHING_ALLOCATOR_STATS_IN_C10 1
#else
#define FOURFOLD_CACHING_ALLOCATOR_STATS_IN_C10 0
#endif
