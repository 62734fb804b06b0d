#pragma once
// One sequence decoded by a decoder at batch 1: a static, preallocated KV cache, a prefill, then
// one token per decode step, eagerly or as one captured step replayed. The layers are libtorch
// ops; the projections, the softmaxes and the MoE blocks go through model_ops/, the functions the
// op workloads (linear_decode, softmax, moe_decode) time, with the paths the session is given.
#include "fourfold/workloads/model_ops/moe.hpp"
#include "fourfold/workloads/model_ops/op_path.hpp"
#include "fourfold/workloads/models/captured_step.hpp"
#include "fourfold/workloads/models/decoder_weights.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/Tensor.h>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

namespace fourfold::workloads::models {

using model_ops::moe_path;

// Which implementation each op of the model takes (model_ops/): the same switch the op
// workloads' variants set. A native path needs the call context the session is given.
struct decoder_paths {
    moe_path moe = moe_path::grouped_mm;
    model_ops::op_path linear = model_ops::op_path::stock;  // every projection and the LM head
    model_ops::op_path softmax = model_ops::op_path::stock; // sampling; attention without SDPA
    // native: the decode step is fourfold's kernels (kernels/: the embedding gather and RMSNorm
    // with the residual add, rope_kv, decode_attention, swiglu, argmax), the projections and
    // the LM head through model_ops::linear with `linear`, the residual adds of the o and down
    // projections as their bias, the MoE layers through model_ops::moe_ffn with `moe`.
    // Attention reads the position from the device, in eager and graph mode alike.
    model_ops::op_path step = model_ops::op_path::stock;
    // The prefill's projections where they are not `linear` (the native GEMV takes 1..8 tokens,
    // a prefill is the whole prompt).
    std::optional<model_ops::op_path> prefill_linear = std::nullopt;
    // native step: the RMSNorms before q/k/v, gate/up and the LM head and the SwiGLU before the
    // down projection inside those GEMVs (kernels/gemv.cu's prologues) where the plan takes it,
    // and rope_kv inside decode attention (decode_attention_rope) where its plan takes it
    bool fuse_prologues = false;
};

// The paths of the decode workload's `native` variant: the decode step of fourfold's kernels,
// every projection through the native GEMV, the MoE layers through fourfold's MoE step
// (kernels/moe.cu: routing on the device, two launches), the prefill through libtorch's ops.
// One definition, so the tests run what `fourfold decode --variants native` runs.
decoder_paths native_decoder_paths();

// y = x W^T (+ bias) for one projection of the model with `path`: a model-dtype weight (scale
// undefined) through model_ops::linear; an fp8_row weight (float8_e4m3fn, scale float32 [N])
// through model_ops::linear_fp8 (fourfold's FP8 GEMV, fp8_linear's native_fp8_row) on the
// native path, else through model_ops::linear_fp8_dequantised (libtorch's ops: dequantised per
// call, then at::linear; fp8_linear's dequant_row).
at::Tensor decoder_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale,
                          const at::Tensor& bias, model_ops::op_path path,
                          const call_context* ctx = nullptr);

// The MLP of layer `layer` on its normalised hidden states h [T, hidden]: the dense SwiGLU
// (model_ops::linear, swiglu) or the MoE block (the router through model_ops::linear, then
// model_ops::moe_ffn), with `paths`. What every session step runs; tests hold it against the op
// workloads on the same weights.
at::Tensor decoder_mlp(const model_config& c, const layer_weights& lw, std::int64_t layer,
                       const at::Tensor& h, const decoder_paths& paths,
                       const call_context* ctx = nullptr);

// Which attention, RMSNorm and GQA paths this build takes, in words (for the records).
std::string attention_path();
std::string rms_norm_path();

// One sequence being decoded (batch 1). The KV cache, the token buffer and the position are
// allocated once, at `capacity` positions; a decode step reads its token and position from
// device tensors, so that the same step can be captured once and replayed.
class decoder_session {
  public:
    // libtorch's own ops, the MoE layers through `moe`.
    decoder_session(std::shared_ptr<const decoder_weights> weights, std::int64_t capacity,
                    moe_path moe);
    // `ctx`: the device and stream a native path launches on; a native path without one is a
    // std::invalid_argument.
    decoder_session(std::shared_ptr<const decoder_weights> weights, std::int64_t capacity,
                    decoder_paths paths, std::optional<call_context> ctx = std::nullopt);
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
    // A native step's kernels: per kernel, its launches a step and its plan(s) (described as
    // the plans say), the launches a step in all; empty before the first native step.
    const json& native_step_facts() const { return m_native_facts; }

  private:
    at::Tensor forward_prefill(const at::Tensor& tokens, bool all_logits);
    void step_body(bool static_shapes);
    void step_native(); // paths.step == native
    model_ops::op_path prefill_linear() const {
        return m_paths.prefill_linear.value_or(m_paths.linear);
    }
    at::Tensor layer_step(const layer_weights& lw, std::int64_t layer, at::Tensor x,
                          const at::Tensor& cos, const at::Tensor& sin, bool static_shapes,
                          const at::Tensor& mask);
    // q [T, heads, hd], k and v [T, kv_heads, hd] of layer `lw` on x [T, hidden]: normalised
    // (Qwen3's q/k norm) and rotated (RoPE by `cos`, `sin` [T, 1, hd]).
    std::tuple<at::Tensor, at::Tensor, at::Tensor>
    attention_inputs(const layer_weights& lw, const at::Tensor& x, const at::Tensor& cos,
                     const at::Tensor& sin, model_ops::op_path linear) const;
    // through decoder_linear: `scale` defined for an fp8_row weight
    at::Tensor project(const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale) const;
    at::Tensor project(const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale,
                       model_ops::op_path path) const;
    at::Tensor probabilities(const at::Tensor& logits) const; // float32 softmax, last dim
    const call_context* context() const { return m_ctx ? &*m_ctx : nullptr; }

    std::shared_ptr<const decoder_weights> m_w;
    std::int64_t m_capacity;
    decoder_paths m_paths;
    std::optional<call_context> m_ctx;
    at::Tensor m_k, m_v;              // [layers, kv_heads, capacity, head_dim]
    at::Tensor m_cos, m_sin;          // [capacity, head_dim], in the weights' dtype
    at::Tensor m_seq;                 // int64 [capacity + 1]
    at::Tensor m_pos;                 // int64 [1]: the position the next step processes
    at::Tensor m_positions;           // int64 [capacity]: 0..capacity-1, for the static mask
    at::Tensor m_logits;              // [1, vocab]
    at::Tensor m_attention_workspace; // native step: decode_attention's split partials (float)
    at::Tensor m_argmax_workspace;    // native step: argmax's counter and block pairs (zeroed)
    json m_native_facts;
    std::int64_t m_host_pos = 0;
    bool m_teacher_forced = false;
    captured_step m_step;
};

} // namespace fourfold::workloads::models
