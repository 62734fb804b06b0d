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
#include <memory>
#include <string>
#include <string_view>
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
    // weight_format::fp8_row: the float32 scale of each output row of qkv, o, gate_up and down
    // (those four then float8_e4m3fn, w = scale[n] * wq[n, :]); undefined in the model dtype
    at::Tensor qkv_scale, o_scale, gate_up_scale, down_scale;
};

// How the projections are stored. model: in the model dtype. fp8_row: qkv, o, the dense MLP's
// gate_up and down and an untied LM head as float8_e4m3fn with one float32 scale per output row
// (amax of the row / 448), quantised from the model-dtype weights; the embedding, the norms, the
// MoE router and experts stay in the model dtype.
enum class weight_format { model, fp8_row };
std::string_view to_string(weight_format f);

// The model-dtype originals of what fp8_row quantised, kept on the CPU for the layers the
// correctness twin keeps and for an untied LM head: what the quantisation's error is measured
// against (never on the device).
struct fp8_originals {
    std::vector<layer_weights> layers; // qkv, o, gate_up, down only
    at::Tensor lm_head;                // undefined when tied to the embedding
};

// Bytes fp8_row stores for the projections it quantises (1 a weight) and their scales (4 a row);
// the same for what a decode step reads of them (every one of them is read once per token).
struct fp8_footprint {
    std::int64_t weights = 0; // quantised weights (elements = bytes)
    std::int64_t scales = 0;  // scale rows (4 bytes each)
};
fp8_footprint fp8_row_footprint(const model_config& c);

struct decoder_weights {
    model_config config;
    at::Tensor embed; // [vocab, hidden]
    std::vector<layer_weights> layers;
    at::Tensor final_norm;
    at::Tensor lm_head;       // [vocab, hidden]; the embedding itself when tied
    at::Tensor lm_head_scale; // fp8_row, untied: float32 [vocab]; undefined otherwise
    weight_format format = weight_format::model;
    std::shared_ptr<const fp8_originals> originals; // fp8_row: see fp8_originals
    std::string source;                             // how the weights were made, for the records

    c10::ScalarType dtype() const;
    c10::Device device() const;
    std::int64_t bytes() const; // storage of every distinct tensor, the scales included
    // The first n layers, every tensor shared (no copy): the reduced-depth correctness twin.
    decoder_weights first_layers(std::int64_t n) const;
    // A copy on the CPU in the same dtype (what the float64 reference upcasts from).
    decoder_weights to_cpu() const;
    // fp8_row: the first layers with the originals in place of the quantised projections (the
    // embedding and the norms shared): the model before its quantisation, format model. Needs
    // the originals on this device (the CPU twin's).
    decoder_weights with_originals() const;
};

// Random weights, documented in docs/performance.md: every projection normal(0, 1/sqrt(fan_in))
// so that a unit-scale input gives a unit-scale output, RMSNorm weights 1, the embedding
// normal(0, 1) (normal(0, 1/sqrt(hidden)) when tied, so the logits stay unit-scale too). The
// residual stream then grows like sqrt(layers) and logits stay near unit scale: finite in bf16.
// Generated on `device` (a CUDA generator on CUDA, so 61 GB never cross the bus) from `seed`
// in float32, then rounded to `type`: the same seed on the same device kind and libtorch gives
// the same weights, and a bf16 model is the rounding of the fp32 one.
// fp8_row: each projection generated as for `model` (the same seed gives the same model-dtype
// weights), then quantised on the device before the next is made (only the fp8 tensors stay
// resident), the originals of the first `keep_originals` layers and of an untied LM head copied
// to the CPU. A libtorch without float8 types throws unsupported_here.
decoder_weights random_weights(const model_config& config, c10::ScalarType type, c10::Device device,
                               std::uint64_t seed, weight_format format = weight_format::model,
                               std::int64_t keep_originals = 0);
// The weights seed the decode workload derives from its init_seed parameter.
std::uint64_t random_weights_seed(std::uint64_t init_seed);

// The Hugging Face tensor names and shapes `config` needs; throws bad_input on the first that
// the checkpoint lacks or holds with another shape or a non-floating dtype.
void check_checkpoint(const model_config& config, const checkpoint& ck);
// Loads a checkpoint (q/k/v and gate/up stacked as above, experts per expert or fused as
// transformers 5 stores them, float8 weights dequantised with their weight_scale_inv) into
// `type` on `device`.
// fp8_row: each projection quantised on the device after it is loaded (as random_weights).
decoder_weights load_weights(const model_config& config, const checkpoint& ck, c10::ScalarType type,
                             c10::Device device, weight_format format = weight_format::model,
                             std::int64_t keep_originals = 0);
// The weights under Hugging Face names (experts one by one, as on the Hub): what
// save_pretrained writes, for round-trip tests. Model-format weights only.
named_tensors hf_tensors(const decoder_weights& w);

} // namespace fourfold::workloads::models
