#pragma once
// FOURFOLD_CHECK_CUDA throws device_error naming the call, the error and where it happened;
// the _NOEXCEPT twin (for destructors) reports to stderr instead.
#include "fourfold/core/error.hpp"

#include <cstdio>
#include <cuda_runtime_api.h>
#include <string>

namespace fourfold::backend::detail {
[[noreturn]] inline void throw_cuda(cudaError_t rc, const char* call, const char* file, int line) {
    throw device_error(std::string("CUDA call ") + call + " failed: " + cudaGetErrorName(rc) +
                       " (" + cudaGetErrorString(rc) + ") at " + file + ":" + std::to_string(line));
}
} // namespace fourfold::backend::detail

#define FOURFOLD_CHECK_CUDA(call)                                                                  \
    do {                                                                                           \
        const cudaError_t fourfold_rc_ = (call);                                                   \
        if (fourfold_rc_ != cudaSuccess)                                                           \
            ::fourfold::backend::detail::throw_cuda(fourfold_rc_, #call, __FILE__, __LINE__);      \
    } while (0)

#define FOURFOLD_CHECK_CUDA_NOEXCEPT(call)                                                         \
    do {                                                                                           \
        const cudaError_t fourfold_rc_ = (call);                                                   \
        if (fourfold_rc_ != cudaSuccess)                                                           \
            std::fprintf(stderr, "fourfold: %s failed: %s at %s:%d\n", #call,                      \
                         cudaGetErrorName(fourfold_rc_), __FILE__, __LINE__);                      \
    } while (0)
