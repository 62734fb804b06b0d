#pragma once
// A mixture-of-experts block at decode time, Qwen3-MoE's: the routing, the SwiGLU experts over
// rows sorted by expert, and the weighted combine. The moe_decode workload's two cases (the whole
// block; the first grouped matmul alone) and the decoder's MoE layers call these functions, so
// moe_decode's op_time figures and decode's tokens/s are about the same code.
#include <ATen/Tensor.h>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace fourfold::workloads {
class call_context;
}

namespace fourfold::workloads::model_ops {

enum class moe_path {
    grouped_mm, // at::_grouped_mm with the group offsets on the device: no host sync
    host_loop,  // the offsets copied to the host, then one at::mm per expert with rows
    native      // fourfold's kernels (kernels/moe.cu): the whole block in two launches, the
                // routing on the device; needs a call context
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
// native: fourfold's grouped GEMV (kernels/moe.cu), the offsets read on the device; needs `ctx`.
at::Tensor grouped_linear(const at::Tensor& rows, const at::Tensor& w, const at::Tensor& offsets,
                          moe_path path, const call_context* ctx = nullptr);
// The SwiGLU experts over rows sorted by expert: gate/up (E, 2W, H), then down (E, H, W). The
// host loop copies the offsets to the host once for both matmuls. (Not the native path: its
// kernels take the whole block, from the router logits; moe_ffn.)
at::Tensor expert_ffn(const at::Tensor& rows, const at::Tensor& w_gate_up, const at::Tensor& w_down,
                      const at::Tensor& offsets, moe_path path);
// Expert outputs back in (token, slot) order, weighted and summed per token in float32, rounded
// once to the rows' dtype (no atomics: deterministic).
at::Tensor combine(const at::Tensor& expert_rows, const moe_routing& r);

// The whole block: route, sort, experts, combine. x (T, H); router_logits (T, E).
// native (needs `ctx`): kernels/moe.cu's one launch (two kernels on a device short of shared
// memory; the record's facts name which), the routing (softmax in fp32, top-k, ties
// to the lower expert index, renormalised when `normalise`) and the grouping on the device, each
// active expert's weights read once per 8 tokens; more than 8 tokens (a prefill) go 8 at a time
// (tokens are independent in the block), the workspace allocated once per call.
at::Tensor moe_ffn(const at::Tensor& x, const at::Tensor& router_logits,
                   const at::Tensor& w_gate_up, const at::Tensor& w_down, std::int64_t top_k,
                   bool normalise, moe_path path, const call_context* ctx = nullptr);

// The decoder's MoE block at decode time in one native launch (kernels/moe.cu's fused prologue):
// h = RMSNorm(x) with norm_weight and eps, the router's logits h router^T (router: E x H, in x's
// dtype), then the experts as moe_ffn's native path, from the residual stream x (T <= 8 tokens,
// contiguous rows); with `add_residual` the result is x + the block (the decoder's residual add,
// rounded once). An undefined tensor where the kernels cannot take it (no native kernels in
// the build, a device without the one launch, a shape the plan refuses): the caller then takes
// the norm, the router and moe_ffn one after another.
at::Tensor moe_block_native(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                            const at::Tensor& router, const at::Tensor& w_gate_up,
                            const at::Tensor& w_down, std::int64_t top_k, bool normalise,
                            bool add_residual, const call_context& ctx);

// Why the native path cannot take this shape (tokens above 8 are taken 8 at a time, so they
// are not a reason), from the kernels' own plan on 16-byte aligned, contiguous tensors; nullopt
// when it can. `element_bytes`: of x and the weights. `block_tokens` > 0: moe_block_native's one
// launch (the fused prologue, h of that many tokens in shared memory) instead of moe_ffn's.
std::optional<std::string> native_moe_unsupported(std::int64_t experts, std::int64_t top_k,
                                                  std::int64_t hidden, std::int64_t width,
                                                  std::int64_t element_bytes,
                                                  std::int64_t block_tokens = 0);

} // namespace fourfold::workloads::model_ops
