#pragma once
// A mixture-of-experts block at decode time, Qwen3-MoE's: the routing, the SwiGLU experts over
// rows sorted by expert, and the weighted combine. The moe_decode workload's two cases (the whole
// block; the first grouped matmul alone) and the decoder's MoE layers call these functions, so
// moe_decode's op_time figures and decode's tokens/s are about the same code.
#include <ATen/Tensor.h>
#include <cstdint>
#include <string_view>

namespace fourfold::workloads::model_ops {

enum class moe_path {
    grouped_mm, // at::_grouped_mm with the group offsets on the device: no host sync
    host_loop   // the offsets copied to the host, then one at::mm per expert with rows
};
std::string_view to_string(moe_path p);

// What the routing decided, on the device.
struct moe_routing {
    at::Tensor order;   // (T*k) int64: the (token, slot) index of each row in expert order
    at::Tensor weights; // (T, k) float32: each token's weights of its k experts
    at::Tensor offsets; // (E) int32: the cumulative end of each expert's rows once sorted
    std::int64_t top_k = 0;
};

// Softmax over the experts in float32, top-k, renormalised to sum to 1 when `normalise`
// (norm_topk_prob); the (token, slot) pairs sorted by expert; per-expert counts by scatter_add
// (bincount would read its maximum on the host) and their cumulative int32 ends. No host sync.
moe_routing route(const at::Tensor& router_logits, std::int64_t top_k, bool normalise);
// The tokens' rows in expert order: sorted row i is token order[i] / top_k.
at::Tensor sorted_rows(const at::Tensor& x, const moe_routing& r);

// rows @ W[e]^T over each expert's group of rows (w: (E, N, K); offsets: (E) int32 ends).
at::Tensor grouped_linear(const at::Tensor& rows, const at::Tensor& w, const at::Tensor& offsets,
                          moe_path path);
// The SwiGLU experts over rows sorted by expert: gate/up (E, 2W, H), then down (E, H, W). The
// host loop copies the offsets to the host once for both matmuls.
at::Tensor expert_ffn(const at::Tensor& rows, const at::Tensor& w_gate_up, const at::Tensor& w_down,
                      const at::Tensor& offsets, moe_path path);
// Expert outputs back in (token, slot) order, weighted and summed per token in float32, rounded
// once to the rows' dtype (no atomics: deterministic).
at::Tensor combine(const at::Tensor& expert_rows, const moe_routing& r);

// The whole block: route, sort, experts, combine. x (T, H); router_logits (T, E).
at::Tensor moe_ffn(const at::Tensor& x, const at::Tensor& router_logits,
                   const at::Tensor& w_gate_up, const at::Tensor& w_down, std::int64_t top_k,
                   bool normalise, moe_path path);

} // namespace fourfold::workloads::model_ops
