#pragma once
// A decoder's weights (Llama 3, Qwen3, Qwen3-MoE): random from a seed, made on the device, or
// loaded from a Hugging Face checkpoint; the reduced-depth twin (the first layers, shared) and
// the CPU copy the float64 reference upcasts from.
#include "fourfold/workloads/models/model_config.hpp"
#include "fourfold/workloads/models/safetensors.hpp"

#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <cstdint>
#include <string>
#include <vector>

namespace fourfold::workloads::models {

struct layer_weights {
    at::Tensor input_norm;          // [hidden]
    at::Tensor post_attention_norm; // [hidden]
    at::Tensor qkv;                 // [q_dim + 2 kv_dim, hidden]: q, k, v projections stacked
    at::Tensor o;                   // [hidden, q_dim]
    at::Tensor q_norm, k_norm;      // [head_dim], Qwen3 only
    at::Tensor gate_up;             // dense MLP: [2 intermediate, hidden], gate rows then up rows
    at::Tensor down;                // dense MLP: [hidden, intermediate]
    at::Tensor router;              // MoE: [experts, hidden]
    at::Tensor experts_gate_up;     // MoE: [experts, 2 moe_intermediate, hidden]
    at::Tensor experts_down;        // MoE: [experts, hidden, moe_intermediate]
};

struct decoder_weights {
    model_config config;
    at::Tensor embed; // [vocab, hidden]
    std::vector<layer_weights> layers;
    at::Tensor final_norm;
    at::Tensor lm_head; // [vocab, hidden]; the embedding itself when tied
    std::string source; // how the weights were made, for the records

    c10::ScalarType dtype() const;
    c10::Device device() const;
    std::int64_t bytes() const; // storage of every distinct tensor
    // The first n layers, every tensor shared (no copy): the reduced-depth correctness twin.
    decoder_weights first_layers(std::int64_t n) const;
    // A copy on the CPU in the same dtype (what the float64 reference upcasts from).
    decoder_weights to_cpu() const;
};

// Random weights, documented in docs/performance.md: every projection normal(0, 1/sqrt(fan_in))
// so that a unit-scale input gives a unit-scale output, RMSNorm weights 1, the embedding
// normal(0, 1) (normal(0, 1/sqrt(hidden)) when tied, so the logits stay unit-scale too). The
// residual stream then grows like sqrt(layers) and logits stay near unit scale: finite in bf16.
// Generated on `device` (a CUDA generator on CUDA, so 61 GB never cross the bus) from `seed`
// in float32, then rounded to `type`: the same seed on the same device kind and libtorch gives
// the same weights, and a bf16 model is the rounding of the fp32 one.
decoder_weights random_weights(const model_config& config, c10::ScalarType type, c10::Device device,
                               std::uint64_t seed);
// The weights seed the decode workload derives from its init_seed parameter.
std::uint64_t random_weights_seed(std::uint64_t init_seed);

// The Hugging Face tensor names and shapes `config` needs; throws bad_input on the first that
// the checkpoint lacks or holds with another shape or a non-floating dtype.
void check_checkpoint(const model_config& config, const checkpoint& ck);
// Loads a checkpoint (q/k/v and gate/up stacked as above, experts per expert or fused as
// transformers 5 stores them, float8 weights dequantised with their weight_scale_inv) into
// `type` on `device`.
decoder_weights load_weights(const model_config& config, const checkpoint& ck, c10::ScalarType type,
                             c10::Device device);
// The weights under Hugging Face names (experts one by one, as on the Hub): what
// save_pretrained writes, for round-trip tests.
named_tensors hf_tensors(const decoder_weights& w);

} // namespace fourfold::workloads::models
