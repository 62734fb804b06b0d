#pragma once
// The float64 CPU reference of a decoder: the same function as decoder_session computes, written
// out plainly (one causal pass, no cache, attention per head, experts per token) in float64.
#include "fourfold/workloads/models/decoder_weights.hpp"

#include <ATen/Tensor.h>
#include <cstdint>

namespace fourfold::workloads::models {

// The float64 reference on the CPU: the same model (weights upcast from the very same values,
// one bounded block at a time) over `tokens` (int64 [T]) as one causal pass without a cache,
// attention per kv head written out, experts looped per token; fp8_row projections dequantised
// (scale[n] * wq[n, :], exact in float64): the fp8 model's own function. Returns the final
// normalised hidden states [T, hidden] in float64; logits_f64 gives the logits for a slice of the
// vocab.
at::Tensor reference_hidden_f64(const decoder_weights& cpu_weights, const at::Tensor& tokens);
at::Tensor reference_logits_f64(const decoder_weights& cpu_weights, const at::Tensor& hidden_f64,
                                std::int64_t vocab_start, std::int64_t vocab_length);
// Bytes of float64 working set one upcast weight block may take in the reference.
inline constexpr std::int64_t k_reference_block_bytes = 64ll << 20;

} // namespace fourfold::workloads::models
