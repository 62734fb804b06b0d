#include "fourfold/workloads/model_ops/moe.hpp"

#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/model_ops/softmax.hpp"
#include "fourfold/workloads/model_ops/swiglu.hpp"
#include "fourfold/workloads/native.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/moe.hpp"
#endif

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

#if FOURFOLD_WITH_KERNELS
static_assert(kernels::k_moe_max_tokens == 8);

const call_context& need_ctx(const call_context* ctx, const char* what) {
    if (!ctx)
        throw std::logic_error(fmt::format("{} native needs a call context (its stream)", what));
    return *ctx;
}

void need_contiguous(const at::Tensor& t, const char* what) {
    if (!t.is_contiguous())
        throw std::invalid_argument(fmt::format("moe native: {} must be contiguous", what));
}

// The plan's facts into the record (when the context asks for them), then the launch.
void record_and_launch(const kernels::moe_plan& plan, const kernels::moe_args& a,
                       const call_context& ctx) {
    if (ctx.wants_facts())
        ctx.fact("kernel", json{{"path", plan.describe()},
                                {"fused_norm_and_router", plan.fused_prologue},
                                {"kernels", plan.kernels},
                                {"token_tile", plan.token_tile},
                                {"pairs", plan.pairs},
                                {"one_launch_blocks", plan.one_launch_blocks},
                                {"one_launch_resident_blocks_per_sm",
                                 kernels::moe_one_launch_residency(plan, a)},
                                {"dependent_launch", plan.dependent_launch},
                                {"shared_memory_bytes_per_block", plan.smem_bytes},
                                {"gate_up_blocks", plan.gate_up_blocks},
                                {"down_blocks", plan.down_blocks},
                                {"threads_per_block", plan.threads},
                                {"workspace_bytes", plan.workspace_bytes},
                                {"l2_prefetch_budget_bytes", plan.l2_prefetch_budget},
                                {"routing", "on the device: softmax fp32, top-k (ties: lower "
                                            "expert index), renormalised; grouped by expert"},
                                {"host_sync", false}});
    native::check(kernels::launch_moe(plan, a, native::stream(ctx)), "moe");
}

// The arguments every native MoE call shares: x (T, H) with contiguous rows, the experts, top-k.
kernels::moe_args expert_args(const at::Tensor& x, const at::Tensor& w_gate_up,
                              const at::Tensor& w_down, std::int64_t top_k, bool normalise) {
    kernels::moe_args a;
    a.x = x.data_ptr();
    a.w_gate_up = w_gate_up.data_ptr();
    a.w_down = w_down.data_ptr();
    a.tokens = x.size(0);
    a.experts = w_gate_up.size(0);
    a.top_k = top_k;
    a.hidden = x.size(1);
    a.width = w_down.size(2);
    a.ld_x = x.stride(0);
    a.normalise = normalise;
    a.type = native::elem_of(x.scalar_type());
    return a;
}

// kernels/moe.cu's launch (or two) for up to 8 tokens; `out` (T, H) and `ws` (the plan's bytes)
// are the caller's.
void native_moe_chunk(const at::Tensor& x, const at::Tensor& logits, const at::Tensor& w_gate_up,
                      const at::Tensor& w_down, std::int64_t top_k, bool normalise,
                      const at::Tensor& out, const at::Tensor& ws, const call_context& ctx) {
    auto a = expert_args(x, w_gate_up, w_down, top_k, normalise);
    a.logits = logits.data_ptr();
    a.y = out.data_ptr();
    a.workspace = ws.data_ptr();
    a.ld_logits = logits.stride(0);
    a.ld_y = out.stride(0);
    a.logits_type = native::elem_of(logits.scalar_type());
    // the down weights prefetched to L2 where they take at most 5/8 of it
    if (const auto l2 = ctx.device().caps().cache_bytes; l2 > 0)
        a.l2_prefetch_bytes = std::min(a.l2_prefetch_bytes, l2 / 8 * 5);
    const auto plan = kernels::plan_moe(a, native::limits(ctx));
    if (!plan.valid.empty())
        throw std::invalid_argument("moe native: " + plan.valid);
    if (ws.numel() < plan.workspace_bytes)
        throw std::logic_error("moe native: workspace smaller than the plan's");
    record_and_launch(plan, a, ctx);
}

at::Tensor native_moe(const at::Tensor& x, const at::Tensor& router_logits,
                      const at::Tensor& w_gate_up, const at::Tensor& w_down, std::int64_t top_k,
                      bool normalise, const call_context* ctx_ptr) {
    const auto& ctx = need_ctx(ctx_ptr, "moe_ffn");
    need_contiguous(w_gate_up, "w_gate_up");
    need_contiguous(w_down, "w_down");
    if (x.dim() != 2 || router_logits.dim() != 2 || router_logits.size(0) != x.size(0) ||
        router_logits.stride(1) != 1 || x.stride(1) != 1)
        throw std::invalid_argument("moe native: x (T, H) and router_logits (T, E) with "
                                    "contiguous rows");
    const std::int64_t tokens = x.size(0), chunk = kernels::k_moe_max_tokens;
    auto out = at::empty({tokens, x.size(1)}, x.options());
    const auto pairs = std::min(tokens, chunk) * top_k;
    const auto ws_bytes =
        kernels::moe_layout(pairs, w_down.size(2), static_cast<std::size_t>(x.element_size()))
            .bytes;
    const auto ws = at::empty({ws_bytes}, x.options().dtype(at::kByte));
    for (std::int64_t t0 = 0; t0 < tokens; t0 += chunk) {
        const auto n = std::min(chunk, tokens - t0);
        native_moe_chunk(x.narrow(0, t0, n), router_logits.narrow(0, t0, n), w_gate_up, w_down,
                         top_k, normalise, out.narrow(0, t0, n), ws, ctx);
    }
    return out;
}

at::Tensor native_block(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                        const at::Tensor& router, const at::Tensor& w_gate_up,
                        const at::Tensor& w_down, std::int64_t top_k, bool normalise,
                        bool add_residual, const call_context& ctx) {
    if (x.dim() != 2 || x.stride(1) != 1 || !norm_weight.is_contiguous() ||
        !router.is_contiguous() || !w_gate_up.is_contiguous() || !w_down.is_contiguous() ||
        router.scalar_type() != x.scalar_type() || norm_weight.scalar_type() != x.scalar_type())
        return {};
    auto a = expert_args(x, w_gate_up, w_down, top_k, normalise);
    a.norm_weight = norm_weight.data_ptr();
    a.router = router.data_ptr();
    a.norm_eps = eps;
    a.ld_logits = a.experts;
    a.ld_y = a.hidden;
    a.add_residual = add_residual;
    a.logits_type = a.type;
    // planned once without the workspace (its size), once with it (its alignment)
    auto plan = kernels::plan_moe(a, native::limits(ctx));
    if (!plan.valid.empty())
        return {};
    const auto ws = at::empty({plan.workspace_bytes}, x.options().dtype(at::kByte));
    auto y = at::empty({a.tokens, a.hidden}, x.options());
    a.workspace = ws.data_ptr();
    a.y = y.data_ptr();
    plan = kernels::plan_moe(a, native::limits(ctx));
    if (!plan.valid.empty())
        throw std::logic_error("moe_block native: " + plan.valid);
    record_and_launch(plan, a, ctx);
    return y;
}

at::Tensor native_grouped_linear(const at::Tensor& rows, const at::Tensor& w,
                                 const at::Tensor& offsets, const call_context* ctx_ptr) {
    const auto& ctx = need_ctx(ctx_ptr, "grouped_linear");
    need_contiguous(w, "w");
    if (offsets.scalar_type() != at::kInt || !offsets.is_contiguous() ||
        offsets.numel() != w.size(0) || rows.stride(1) != 1)
        throw std::invalid_argument("grouped_linear native: int32 offsets, one per expert, and "
                                    "rows with contiguous columns");
    auto y = at::empty({rows.size(0), w.size(1)}, rows.options());
    kernels::grouped_gemv_args a;
    a.rows = rows.data_ptr();
    a.w = w.data_ptr();
    a.offsets = offsets.data_ptr<std::int32_t>();
    a.y = y.data_ptr();
    a.rows_count = rows.size(0);
    a.experts = w.size(0);
    a.n = w.size(1);
    a.k = w.size(2);
    a.ld_rows = rows.stride(0);
    a.ld_y = y.stride(0);
    a.type = native::elem_of(rows.scalar_type());
    const auto plan = kernels::plan_grouped_gemv(a, native::limits(ctx));
    if (!plan.valid.empty())
        throw std::invalid_argument("grouped_linear native: " + plan.valid);
    if (ctx.wants_facts())
        ctx.fact("kernel", json{{"path", plan.describe()},
                                {"blocks", plan.blocks},
                                {"threads_per_block", plan.threads},
                                {"row_tile", plan.row_tile},
                                {"host_sync", false}});
    native::check(kernels::launch_grouped_gemv(plan, a, native::stream(ctx)), "grouped_gemv");
    return y;
}
#else
[[noreturn]] void no_kernels(const char* what) {
    throw std::logic_error(fmt::format("{} native ran in a build without native kernels", what));
}
#endif

} // namespace

std::string_view to_string(moe_path p) {
    switch (p) {
    case moe_path::grouped_mm:
        return "grouped_mm";
    case moe_path::host_loop:
        return "host_loop";
    case moe_path::native:
        return "native";
    }
    return "?";
}

std::optional<std::string> native_moe_unsupported(std::int64_t experts, std::int64_t top_k,
                                                  std::int64_t hidden, std::int64_t width,
                                                  std::int64_t element_bytes,
                                                  std::int64_t block_tokens) {
#if FOURFOLD_WITH_KERNELS
    // the plan looks only at addresses: aligned stand-ins
    auto* p = reinterpret_cast<void*>(std::uintptr_t{1} << 20);
    kernels::moe_args a;
    a.x = a.logits = a.w_gate_up = a.w_down = p;
    a.y = a.workspace = p;
    a.tokens = 1;
    a.experts = experts;
    a.top_k = top_k;
    a.hidden = hidden;
    a.width = width;
    a.ld_x = a.ld_y = hidden;
    a.ld_logits = experts;
    a.type = element_bytes == 4 ? kernels::elem::f32 : kernels::elem::bf16;
    a.logits_type = kernels::elem::f32;
    if (block_tokens > 0) { // moe_block_native's launch: the fused prologue, its tokens
        a.tokens = block_tokens;
        a.norm_weight = a.router = p;
        a.norm_eps = 1e-6;
        a.logits_type = a.type;
    }
    const auto plan = kernels::plan_moe(a, kernels::device_limits{});
    if (!plan.valid.empty())
        return "the native MoE kernels: " + plan.valid;
    return std::nullopt;
#else
    (void)experts;
    (void)top_k;
    (void)hidden;
    (void)width;
    (void)element_bytes;
    (void)block_tokens;
    return std::string("a build without native kernels");
#endif
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
                          moe_path path, const call_context* ctx) {
    if (path == moe_path::native) {
#if FOURFOLD_WITH_KERNELS
        return native_grouped_linear(rows, w, offsets, ctx);
#else
        (void)ctx;
        no_kernels("grouped_linear");
#endif
    }
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
    if (path == moe_path::native)
        throw std::logic_error("expert_ffn: the native kernels take the whole block (moe_ffn)");
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
                   bool normalise, moe_path path, const call_context* ctx) {
    if (path == moe_path::native) {
#if FOURFOLD_WITH_KERNELS
        return native_moe(x, router_logits, w_gate_up, w_down, top_k, normalise, ctx);
#else
        (void)ctx;
        no_kernels("moe_ffn");
#endif
    }
    const auto r = route(router_logits, top_k, normalise);
    return combine(expert_ffn(sorted_rows(x, r), w_gate_up, w_down, r.offsets, path), r);
}

at::Tensor moe_block_native(const at::Tensor& x, const at::Tensor& norm_weight, double eps,
                            const at::Tensor& router, const at::Tensor& w_gate_up,
                            const at::Tensor& w_down, std::int64_t top_k, bool normalise,
                            bool add_residual, const call_context& ctx) {
#if FOURFOLD_WITH_KERNELS
    return native_block(x, norm_weight, eps, router, w_gate_up, w_down, top_k, normalise,
                        add_residual, ctx);
#else
    (void)x, (void)norm_weight, (void)eps, (void)router, (void)w_gate_up, (void)w_down, (void)top_k,
        (void)normalise, (void)add_residual, (void)ctx;
    return {};
#endif
}

} // namespace fourfold::workloads::model_ops
