#pragma once
// RMSNorm through libtorch's ops, shared by the decoder's stock step and the moe_decode
// workload's part=block (the norm before the router).
#include <ATen/ATen.h>
#include <string>

#if __has_include(<ATen/ops/rms_norm.h>)
#define FOURFOLD_HAS_RMS_NORM 1
#else
#define FOURFOLD_HAS_RMS_NORM 0
#endif

namespace fourfold::workloads::model_ops {

// weight * x / sqrt(mean(x^2) + eps) over the last dimension: at::rms_norm where libtorch has
// it, else Hugging Face's LlamaRMSNorm (normalise in float32, round, then scale).
inline at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
#if FOURFOLD_HAS_RMS_NORM
    return at::rms_norm(x, {weight.size(0)}, weight, eps);
#else
    const auto xf = x.to(at::kFloat);
    const auto r = at::rsqrt(xf.pow(2).mean({-1}, true).add_(eps));
    return weight * (xf * r).to(x.scalar_type());
#endif
}

// Which of the two rms_norm runs, for the records' facts.
inline std::string rms_norm_path() {
#if FOURFOLD_HAS_RMS_NORM
    return "at::rms_norm";
#else
    return "composite: float32 mean of squares, rsqrt, scale (libtorch has no at::rms_norm before "
           "2.4)";
#endif
}

} // namespace fourfold::workloads::model_ops
