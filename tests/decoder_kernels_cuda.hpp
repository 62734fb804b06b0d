#pragma once
// Shared by the GPU tests of the decoder's kernels (test_rmsnorm_cuda.cpp, test_rope_kv_cuda.cpp,
// test_decode_attention_cuda.cpp, test_argmax_cuda.cpp, test_swiglu_cuda.cpp, and the GEMV's
// test_gemv_claim_cuda.cpp, test_dependent_launch_cuda.cpp): the device, the stream a kernel
// launches on, the dtypes and their tolerances, one token's GEMV arguments. Each test skips without
// a CUDA device or in a build without native kernels.
#include "fourfold/backend/device.hpp"
#include "fourfold/workloads/workload.hpp"
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/workloads/native.hpp"
#endif

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

namespace fourfold::testing::decoder_kernels {

inline std::unique_ptr<backend::device> gpu() {
    if (!FOURFOLD_WITH_KERNELS || backend::cuda_device_count() == 0)
        return nullptr;
    return backend::open_device({backend::device_kind::cuda, 0});
}

#define REQUIRE_NATIVE(dev)                                                                        \
    auto dev = ::fourfold::testing::decoder_kernels::gpu();                                        \
    if (!dev)                                                                                      \
    GTEST_SKIP() << "no CUDA device visible, or a build without native kernels"

inline const std::vector<at::ScalarType>& types() {
    static const std::vector<at::ScalarType> t{at::kFloat, at::kBFloat16, at::kHalf};
    return t;
}

// The largest error a kernel may have against the float64 reference, relative to the larger
// of 1 and the reference's magnitude: a few roundings to the element type.
inline double tolerance(at::ScalarType t) {
    return t == at::kFloat ? 2e-5 : t == at::kHalf ? 4e-3 : 3e-2;
}

// max |out - ref| / max(1, |ref|), elementwise, out of any dtype and device, ref float64 on the
// CPU.
inline double scaled_error(const at::Tensor& out, const at::Tensor& ref) {
    const auto o = out.to(at::kCPU).to(at::kDouble);
    const auto r = ref.to(at::kCPU).to(at::kDouble);
    return ((o - r).abs() / r.abs().clamp_min(1.0)).max().item<double>();
}

// The value a float64 tensor rounds to in `t`, back in float64 (what a kernel stores).
inline at::Tensor rounded(const at::Tensor& x, at::ScalarType t) {
    return x.to(t).to(at::kDouble);
}

#if FOURFOLD_WITH_KERNELS
// One token's y = x Wᵀ as the GEMV's plan sees it: W n x k (rows contiguous), x's row of k at its
// pointer (rows ld_x apart), y's of n.
inline kernels::gemv_args one_token(const void* x, const void* w, void* y, std::int64_t n,
                                    std::int64_t k, std::int64_t ld_x, at::ScalarType t) {
    kernels::gemv_args a;
    a.x = x;
    a.w = w;
    a.y = y;
    a.tokens = 1;
    a.n = n;
    a.k = k;
    a.ld_x = ld_x;
    a.ld_w = k;
    a.ld_y = n;
    a.type = workloads::native::elem_of(t);
    return a;
}
#endif

} // namespace fourfold::testing::decoder_kernels
