#include "fourfold/workloads/model_ops/moe.hpp"

#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/model_ops/softmax.hpp"
#include "fourfold/workloads/model_ops/swiglu.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <stdexcept>

namespace fourfold::workloads::model_ops {
namespace {

// One at::mm per expert with rows, into its slice of one output: the loop the grouped matmul
// replaced. `ends`: the int32 offsets, already on the host.
at::Tensor loop_over_groups(const at::Tensor& rows, const at::Tensor& w, const at::Tensor& ends) {
    const auto* end = ends.data_ptr<std::int32_t>();
    auto out = at::empty({rows.size(0), w.size(1)}, rows.options());
    std::int64_t start = 0;
    for (std::int64_t e = 0; e < ends.size(0); ++e) {
        const std::int64_t stop = end[e];
        if (stop > start) {
            auto dst = out.narrow(0, start, stop - start);
            at::mm_out(dst, rows.narrow(0, start, stop - start), w[e].t());
        }
        start = stop;
    }
    return out;
}

// The host copy waits for the routing: the sync the grouped path does without.
at::Tensor offsets_on_host(const at::Tensor& offsets) {
    return offsets.to(at::kCPU);
}

} // namespace

std::string_view to_string(moe_path p) {
    return p == moe_path::grouped_mm ? "grouped_mm" : "host_loop";
}

moe_routing route(const at::Tensor& router_logits, std::int64_t top_k, bool normalise) {
    const auto probs = softmax(router_logits, op_path::stock, nullptr, at::kFloat);
    auto [values, chosen] = at::topk(probs, top_k, -1);
    if (normalise)
        values = values / values.sum(-1, true);
    const auto flat = chosen.reshape({-1});
    const auto experts = router_logits.size(-1);
    // rows of one expert may come in any order: each row's result is its own
    const auto order = std::get<1>(at::sort(flat, 0, false));
    const auto counts =
        at::zeros({experts}, flat.options()).scatter_add_(0, flat, at::ones_like(flat));
    return {order, values, at::cumsum(counts, 0).to(at::kInt), top_k};
}

at::Tensor sorted_rows(const at::Tensor& x, const moe_routing& r) {
    return x.index_select(0, r.order.div(r.top_k, "floor"));
}

at::Tensor grouped_linear(const at::Tensor& rows, const at::Tensor& w, const at::Tensor& offsets,
                          moe_path path) {
    if (path == moe_path::host_loop)
        return loop_over_groups(rows, w, offsets_on_host(offsets));
#if FOURFOLD_HAS_GROUPED_MM
    // (E, N, K) weights seen as (E, K, N) column-major: the layout _grouped_mm's fast path takes
    return at::_grouped_mm(rows, w.transpose(1, 2), offsets);
#else
    throw unsupported_here(fmt::format("at::_grouped_mm is not available in libtorch {}.{}",
                                       TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
#endif
}

at::Tensor expert_ffn(const at::Tensor& rows, const at::Tensor& w_gate_up, const at::Tensor& w_down,
                      const at::Tensor& offsets, moe_path path) {
    if (path == moe_path::host_loop) {
        const auto ends = offsets_on_host(offsets);
        return loop_over_groups(swiglu(loop_over_groups(rows, w_gate_up, ends)), w_down, ends);
    }
    return grouped_linear(swiglu(grouped_linear(rows, w_gate_up, offsets, path)), w_down, offsets,
                          path);
}

at::Tensor combine(const at::Tensor& expert_rows, const moe_routing& r) {
    const auto tokens = r.weights.size(0), hidden = expert_rows.size(1);
    const auto unsorted = at::empty_like(expert_rows).index_copy_(0, r.order, expert_rows);
    const auto weighted = unsorted.view({tokens, r.top_k, hidden}).to(at::kFloat) *
                          r.weights.to(at::kFloat).unsqueeze(-1);
    return weighted.sum(1).to(expert_rows.scalar_type());
}

at::Tensor moe_ffn(const at::Tensor& x, const at::Tensor& router_logits,
                   const at::Tensor& w_gate_up, const at::Tensor& w_down, std::int64_t top_k,
                   bool normalise, moe_path path) {
    const auto r = route(router_logits, top_k, normalise);
    return combine(expert_ffn(sorted_rows(x, r), w_gate_up, w_down, r.offsets, path), r);
}

} // namespace fourfold::workloads::model_ops
