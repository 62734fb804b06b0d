#pragma once
// The decoder architectures (Llama 3, Qwen3, Qwen3-MoE) built from libtorch ops: weights made
// on the device from a seed or loaded from a checkpoint, a session with a static, preallocated
// KV cache that runs a prefill and then one token per decode step (eagerly, or as one captured
// step replayed), and the float64 CPU reference of the same function.
#include "fourfold/workloads/models/model_config.hpp"
#include "fourfold/workloads/models/safetensors.hpp"

#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fourfold::backend {
class device;
class captured_graph;
} // namespace fourfold::backend

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

enum class moe_path {
    grouped_mm, // at::_grouped_mm with the group offsets on the device: no host sync
    host_loop   // the expert counts copied to the host, then a loop over the experts hit
};

// Which attention, RMSNorm and GQA paths this build takes, in words (for the records).
std::string attention_path();
std::string rms_norm_path();

// One sequence being decoded (batch 1). The KV cache, the token buffer and the position are
// allocated once, at `capacity` positions; a decode step reads its token and position from
// device tensors, so that the same step can be captured once and replayed.
class decoder_session {
  public:
    decoder_session(std::shared_ptr<const decoder_weights> weights, std::int64_t capacity,
                    moe_path moe);
    ~decoder_session();
    decoder_session(const decoder_session&) = delete;
    decoder_session& operator=(const decoder_session&) = delete;

    // Prefill: runs `prompt` (int64 [T], on the device) at positions 0..T-1, fills the cache and
    // samples the token at position T greedily (softmax over the vocabulary, argmax), leaving
    // the session ready for decode steps. Returns the last position's logits [1, vocab].
    at::Tensor prefill(const at::Tensor& prompt);
    // Teacher forcing: like prefill over tokens[0..P), returning the logits of every prompt
    // position [P, vocab]; later steps read their input from `tokens` instead of sampling.
    at::Tensor prefill_teacher_forced(const at::Tensor& tokens, std::int64_t prompt_length);

    // One decode step at the current position: eagerly, or by replaying the captured step.
    void step();
    // Captures one decode step (static shapes: attention over the whole cache with a mask
    // from the position) through the device's graph capture; later step() calls replay it.
    void capture(backend::device& dev);
    bool captured() const;

    std::int64_t position() const { return m_host_pos; }
    std::int64_t capacity() const { return m_capacity; }
    const at::Tensor& logits() const { return m_logits; } // the last step's [1, vocab]
    const at::Tensor& tokens() const { return m_seq; }    // prompt, then sampled tokens
    std::int64_t kv_cache_bytes() const;

  private:
    at::Tensor forward_prefill(const at::Tensor& tokens, bool all_logits);
    void step_body(bool static_shapes);
    at::Tensor layer_step(const layer_weights& lw, std::int64_t layer, at::Tensor x,
                          const at::Tensor& cos, const at::Tensor& sin, bool static_shapes,
                          const at::Tensor& mask);
    at::Tensor mlp(const layer_weights& lw, std::int64_t layer, const at::Tensor& h) const;

    std::shared_ptr<const decoder_weights> m_w;
    std::int64_t m_capacity;
    moe_path m_moe;
    at::Tensor m_k, m_v;     // [layers, kv_heads, capacity, head_dim]
    at::Tensor m_cos, m_sin; // [capacity, head_dim], in the weights' dtype
    at::Tensor m_seq;        // int64 [capacity + 1]
    at::Tensor m_pos;        // int64 [1]: the position the next step processes
    at::Tensor m_positions;  // int64 [capacity]: 0..capacity-1, for the static mask
    at::Tensor m_logits;     // [1, vocab]
    std::int64_t m_host_pos = 0;
    bool m_teacher_forced = false;
    std::unique_ptr<backend::captured_graph> m_graph;
};

// The float64 reference on the CPU: the same model (weights upcast from the very same values,
// one bounded block at a time) over `tokens` (int64 [T]) as one causal pass without a cache,
// attention per kv head written out, experts looped per token. Returns the final normalised
// hidden states [T, hidden] in float64; logits_f64 gives the logits for a slice of the vocab.
at::Tensor reference_hidden_f64(const decoder_weights& cpu_weights, const at::Tensor& tokens);
at::Tensor reference_logits_f64(const decoder_weights& cpu_weights, const at::Tensor& hidden_f64,
                                std::int64_t vocab_start, std::int64_t vocab_length);
// Bytes of float64 working set one upcast weight block may take in the reference.
inline constexpr std::int64_t k_reference_block_bytes = 64ll << 20;

} // namespace fourfold::workloads::models
