// One MoE expert-FFN step at decode time (experiment E2): T tokens, each routed to its top-k of E
// SwiGLU experts (gate and up fused into one 2W x H weight per expert, down W -> H), the expert
// outputs weighted by the normalised router probabilities and summed per token, as in
// Qwen3-MoE (norm_topk_prob). The report's change is how the grouped matmul learns where each
// expert's rows start: `generic` copies the routing offsets to the host and loops over experts
// (the path it replaced); `stock` hands int32 offsets that stay on the device to _grouped_mm;
// `native` is fourfold's own kernels (kernels/moe.cu): for part=ffn the whole block in one
// launch (two on a device short of shared memory) with the routing on the device, for part=gate_up
// a grouped GEMV reading the offsets on the device; each active expert's weights are read once a
// call.
//
// Three cases over the code the decoder's MoE layers run (model_ops/moe.hpp): part=ffn times the
// whole block from router logits to the combined output; part=gate_up times the first grouped
// matmul alone on rows already sorted by expert (the pair of figures the baseline table of
// REFERENCE_EXPERIMENTS.md holds: 33 us vs 290 us); part=block times the decoder's MoE block from
// the residual stream (the norm and the router inside; native: the one launch the native
// decoder's MoE layers run).
#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#include "fourfold/workloads/model_ops/moe.hpp"
#include "fourfold/workloads/model_ops/rms_norm.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <numeric>

namespace fourfold::workloads {
namespace {

// The routing is a function of the shape alone, not of the job's seed: how many distinct experts
// the tokens reach decides the bytes a call reads, and declared_cost() must know that before any
// input exists.
constexpr std::uint64_t k_routing_seed = 0x6d6f65'726f757465ull; // "moeroute"

struct routing {
    at::Tensor logits;                 // (T, E) fp32, distinct values in every row
    std::vector<std::int64_t> expert;  // (T * k) chosen experts, row-major (token, slot)
    std::vector<double> weight;        // (T * k) normalised top-k probabilities (float64)
    std::vector<std::int32_t> offsets; // (E) cumulative end of each expert's rows once sorted
    std::vector<std::int64_t> order;   // (T * k) (token, slot) index of each sorted row
    std::int64_t active = 0;           // distinct experts with at least one row
};

// Row i's seeded ranking of the experts (a Fisher-Yates permutation: rank[e] of expert e), and
// its generator left where the shuffle ends (routing_logits draws its jitter from it).
std::vector<std::int64_t> seeded_ranking(std::int64_t i, std::int64_t experts, xoshiro256& rng) {
    rng = xoshiro256(splitmix64(k_routing_seed ^ static_cast<std::uint64_t>(i)));
    std::vector<std::int64_t> rank(static_cast<std::size_t>(experts));
    std::iota(rank.begin(), rank.end(), 0);
    for (std::int64_t j = experts - 1; j > 0; --j)
        std::swap(rank[static_cast<std::size_t>(j)],
                  rank[static_cast<std::size_t>(rng.next() % static_cast<std::uint64_t>(j + 1))]);
    return rank;
}

// Router logits with a random ranking per token and a gap of at least 3/E between any two
// values, so that the top-k set is the same in fp32 on any device and in float64 on the CPU.
at::Tensor routing_logits(std::int64_t tokens, std::int64_t experts) {
    auto t = at::empty({tokens, experts}, at::TensorOptions().dtype(at::kFloat));
    auto* p = t.data_ptr<float>();
    const double step = 6.0 / static_cast<double>(experts);
    xoshiro256 rng(0);
    for (std::int64_t i = 0; i < tokens; ++i) {
        const auto rank = seeded_ranking(i, experts, rng);
        for (std::int64_t e = 0; e < experts; ++e) {
            const double jitter = 0.5 * unit_interval(rng.next());
            p[i * experts + e] = static_cast<float>(
                (static_cast<double>(rank[static_cast<std::size_t>(e)]) + jitter) * step - 3.0);
        }
    }
    return t;
}

// The stable order of the (token, slot) pairs by expert and each expert's cumulative end offset.
void group_by_expert(routing& r, std::int64_t experts) {
    const auto n = static_cast<std::int64_t>(r.expert.size());
    r.order.resize(static_cast<std::size_t>(n));
    std::iota(r.order.begin(), r.order.end(), 0);
    std::stable_sort(r.order.begin(), r.order.end(), [&](std::int64_t a, std::int64_t b) {
        return r.expert[static_cast<std::size_t>(a)] < r.expert[static_cast<std::size_t>(b)];
    });
    r.offsets.assign(static_cast<std::size_t>(experts), 0);
    for (const auto e : r.expert)
        ++r.offsets[static_cast<std::size_t>(e)];
    for (const auto c : r.offsets)
        r.active += c > 0 ? 1 : 0;
    std::partial_sum(r.offsets.begin(), r.offsets.end(), r.offsets.begin());
}

// Softmax, top-k, renormalise (in float64: the reference's own routing), then the grouping.
routing route(std::int64_t tokens, std::int64_t experts, std::int64_t top_k) {
    routing r;
    r.logits = routing_logits(tokens, experts);
    const auto probs = at::softmax(r.logits.to(at::kDouble), -1);
    const auto top = at::topk(probs, top_k, -1);
    const auto values = std::get<0>(top);
    const auto norm = (values / values.sum(-1, true)).contiguous();
    const auto idx = std::get<1>(top).contiguous();
    const auto n = tokens * top_k;
    r.expert.assign(idx.data_ptr<std::int64_t>(), idx.data_ptr<std::int64_t>() + n);
    r.weight.assign(norm.data_ptr<double>(), norm.data_ptr<double>() + n);
    group_by_expert(r, experts);
    return r;
}

// part=block's routing, fixed through its inputs (moe_block_case): token t is in group t mod G of
// G = min(tokens, 64, hidden) contiguous slices of the hidden dimensions; group g ranks the
// experts by a seeded permutation (routing_logits' generator), and the router's value for expert
// e over group g is k = max(rank - (E - 128), 0) - 64: the top 128 ranks distinct in -64..63,
// the rest tied at -64 below them.
struct block_routing {
    std::int64_t groups = 0;
    std::vector<std::vector<int>> level; // [group][expert]: k in -64..63
};

block_routing block_levels(std::int64_t tokens, std::int64_t experts, std::int64_t hidden) {
    block_routing b;
    b.groups = std::min<std::int64_t>({tokens, 64, hidden});
    xoshiro256 rng(0);
    for (std::int64_t g = 0; g < b.groups; ++g) {
        const auto rank = seeded_ranking(g, experts, rng);
        std::vector<int> k(static_cast<std::size_t>(experts));
        for (std::int64_t e = 0; e < experts; ++e)
            k[static_cast<std::size_t>(e)] = static_cast<int>(
                std::max<std::int64_t>(rank[static_cast<std::size_t>(e)] - (experts - 128), 0) -
                64);
        b.level.push_back(std::move(k));
    }
    return b;
}

// The experts each token's top_k picks: its group's highest levels (distinct for top_k <= 127),
// in descending order; no weights (they depend on the inputs: the reference computes them).
routing block_route(const block_routing& b, std::int64_t tokens, std::int64_t experts,
                    std::int64_t top_k) {
    routing r;
    for (std::int64_t t = 0; t < tokens; ++t) {
        const auto& k = b.level[static_cast<std::size_t>(t % b.groups)];
        std::vector<std::int64_t> idx(static_cast<std::size_t>(experts));
        std::iota(idx.begin(), idx.end(), 0);
        std::stable_sort(idx.begin(), idx.end(), [&](std::int64_t a, std::int64_t c) {
            return k[static_cast<std::size_t>(a)] > k[static_cast<std::size_t>(c)];
        });
        r.expert.insert(r.expert.end(), idx.begin(), idx.begin() + top_k);
    }
    group_by_expert(r, experts);
    return r;
}

// The float64 experts over h [T, H] (float64) with `r`'s grouping and the (token, slot) weights:
// out += sum_j w_j W_down[e_j] (silu(gate) * up), one active expert at a time (only those
// upcast), the references of part=ffn and part=block.
void add_experts_float64(at::Tensor& out, const at::Tensor& h, const at::Tensor& w_gate_up,
                         const at::Tensor& w_down, const routing& r,
                         const std::vector<double>& weight, std::int64_t top_k,
                         std::int64_t width) {
    std::size_t pos = 0;
    for (std::size_t e = 0; e < r.offsets.size(); ++e) {
        const auto stop = static_cast<std::size_t>(r.offsets[e]);
        if (stop == pos)
            continue;
        std::vector<std::int64_t> token_ids;
        std::vector<double> weights;
        for (; pos < stop; ++pos) {
            const auto pair = r.order[pos];
            token_ids.push_back(pair / top_k);
            weights.push_back(weight[static_cast<std::size_t>(pair)]);
        }
        const auto ids = at::tensor(token_ids);
        const auto ex = static_cast<std::int64_t>(e);
        const auto gu = at::matmul(h.index_select(0, ids), w_gate_up[ex].to(at::kDouble).t());
        const auto act = at::silu(gu.narrow(1, 0, width)) * gu.narrow(1, width, width);
        const auto y = at::matmul(act, w_down[ex].to(at::kDouble).t());
        out.index_add_(0, ids, y * at::tensor(weights).unsqueeze(1));
    }
}

using model_ops::moe_path;

// What both parts share: the shape, its fixed routing, the checks, the skips and the facts.
class moe_decode_case : public workload_case {
  public:
    explicit moe_decode_case(const case_args& a)
        : workload_case(a), m_tokens(a.get_int("tokens")), m_experts(a.get_int("experts")),
          m_top_k(a.get_int("top_k")), m_hidden(a.get_int("hidden")), m_width(a.get_int("width")) {
        if (m_top_k > m_experts)
            throw bad_input(fmt::format("moe_decode: top_k={} is above experts={}; valid: top_k "
                                        "in 1..{}",
                                        m_top_k, m_experts, m_experts));
        if (m_tokens * m_top_k > std::numeric_limits<std::int32_t>::max())
            throw bad_input(fmt::format("moe_decode: tokens x top_k = {} does not fit the int32 "
                                        "offsets; choose fewer tokens",
                                        m_tokens * m_top_k));
        m_routing = route(m_tokens, m_experts, m_top_k);
    }

    std::optional<std::string> unsupported(const std::string& variant,
                                           const backend::device& dev) const override {
        const auto e = size_bytes(args().type);
        if (variant == "native")
            // (part=gate_up's grouped GEMV has no top_k limit)
            return model_ops::native_moe_unsupported(m_experts,
                                                     weight_matrices() == 3 ? m_top_k : 1, m_hidden,
                                                     m_width, static_cast<std::int64_t>(e));
        if (variant != "stock")
            return std::nullopt;
        if ((m_hidden * e) % 16 != 0 || (m_width * e) % 16 != 0)
            return fmt::format("_grouped_mm needs 16-byte aligned strides: hidden={} and width={} "
                               "must be multiples of {} {} elements",
                               m_hidden, m_width, 16 / e, to_string(args().type));
        if (dev.spec().kind == backend::device_kind::cuda) {
            if (const auto why = dev.caps().missing("grouped_mm_fast"))
                return *why;
            if (args().type != dtype::bf16)
                return fmt::format("_grouped_mm's fast path takes bf16 only; in {} it falls back "
                                   "to a per-group mm loop that syncs with the host (the generic "
                                   "variant's path)",
                                   to_string(args().type));
        }
        return std::nullopt;
    }

    json variant_facts(const std::string& variant) const override {
        const auto e = size_bytes(args().type);
        const auto matrices = weight_matrices();
        json f{{"active_experts", m_routing.active},
               {"routed_rows", m_tokens * m_top_k},
               {"expert_weight_bytes_read", m_routing.active * matrices * m_width * m_hidden * e},
               {"weight_storage_bytes", m_experts * matrices * m_width * m_hidden * e},
               {"routing", "fixed per shape (seeded ranking of router logits), the same on "
                           "every device"}};
        if (variant == "native") {
            f["host_sync"] = false;
            f["offsets"] = weight_matrices() == 3
                               ? "none: the routing and the grouping by expert on the device"
                               : "int32 cumulative end indices, read on the device";
            f["path"] = weight_matrices() == 3
                            ? fmt::format("fourfold kernels/moe.cu: route, gate/up + SwiGLU, "
                                          "down + weighted combine in one launch where the "
                                          "device holds it, else two (the plan says which){}",
                                          m_tokens > 8 ? ", 8 tokens at a time" : "")
                            : "fourfold kernels/moe.cu: grouped GEMV over the active experts";
        } else if (variant == "stock") {
            f["host_sync"] = false;
            f["offsets"] = "int32 cumulative end indices, kept on the device";
            f["path"] = "at::_grouped_mm, 2D rows x 3D expert weights";
        } else {
            f["host_sync"] = true;
            f["offsets"] = "copied to the host (.cpu()) once, before the loop";
            f["path"] = fmt::format("host loop over experts: {} at::mm_out call(s) per grouped "
                                    "matmul, one per active expert",
                                    m_routing.active);
        }
        return f;
    }

    at::Tensor stock(const call_context&, const input_set& in) const {
        return run(in, moe_path::grouped_mm, nullptr);
    }
    // The path the report replaced: the offsets go to the host, which then issues one mm per
    // active expert (a sync that drains the queue, then E launches instead of one).
    at::Tensor generic(const call_context&, const input_set& in) const {
        return run(in, moe_path::host_loop, nullptr);
    }
    // fourfold's kernels, on the call's stream; the plan lands in the records' facts.
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        return run(in, moe_path::native, &ctx);
    }

  protected:
    // The part's call through model_ops, the code the decoder's MoE layers run.
    virtual at::Tensor run(const input_set& in, moe_path path, const call_context* ctx) const = 0;
    // gate/up (2 W x H) and, for the whole block, down (H x W): expert matrices of W x H read.
    virtual std::int64_t weight_matrices() const = 0;

    // The shape as the byte and FLOP counts use it: element bytes, tokens, top_k, hidden,
    // width, experts reached, experts.
    std::array<double, 7> counts() const {
        return {static_cast<double>(size_bytes(args().type)),
                static_cast<double>(m_tokens),
                static_cast<double>(m_top_k),
                static_cast<double>(m_hidden),
                static_cast<double>(m_width),
                static_cast<double>(m_routing.active),
                static_cast<double>(m_experts)};
    }

    // bf16 through the whole expert FFN: atol 2^-5 x RMS (part=ffn's measured bound, above);
    // fp32 keeps the default
    measure::tolerance expert_stores_tolerance(std::string source) const {
        auto t = workload_case::tolerance();
        if (args().type == dtype::bf16) {
            t.atol_scale = 0.03125;
            t.source = std::move(source);
        }
        return t;
    }

    at::Tensor gate_up_weights(std::uint64_t seed, c10::ScalarType type) const {
        // Kaiming-uniform expert weights keep every stage near unit scale.
        const double bound = 1.0 / std::sqrt(static_cast<double>(m_hidden));
        return seeded_uniform({m_experts, 2 * m_width, m_hidden}, sub_seed(seed, 1), -bound, bound,
                              type);
    }

    at::Tensor down_weights(std::uint64_t seed, c10::ScalarType type) const {
        const double bound = 1.0 / std::sqrt(static_cast<double>(m_width));
        return seeded_uniform({m_experts, m_hidden, m_width}, sub_seed(seed, 2), -bound, bound,
                              type);
    }

    std::int64_t m_tokens, m_experts, m_top_k, m_hidden, m_width;
    routing m_routing;
};

// part=ffn: routing, gate/up, SwiGLU, down, combine (model_ops::moe_ffn).
class moe_ffn_case final : public moe_decode_case {
  public:
    using moe_decode_case::moe_decode_case;

    cost declared_cost() const override {
        const auto [e, t, k, h, w, active, experts] = counts();
        return {e * (active * 3 * w * h + t * h) + 4 * t * experts, e * t * h,
                2 * t * k * (h * 2 * w + w * h),
                "read the gate/up and down weights of the experts the routing reaches, the "
                "tokens and the fp32 router logits once; write the combined outputs once"};
    }

    input_set make_inputs(std::uint64_t seed) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        return input_set()
            .add("x", seeded_normal({m_tokens, m_hidden}, sub_seed(seed, 0), 0.0, 1.0, type))
            .add("router_logits", m_routing.logits.clone())
            .add("w_gate_up", gate_up_weights(seed, type))
            .add("w_down", down_weights(seed, type));
    }

    // One expert at a time: only the experts the routing reaches are upcast to float64.
    reference_plan reference(const input_set& in) const override {
        reference_plan plan;
        plan.chunks = 1;
        plan.chunk_bytes_bound =
            3 * m_hidden * m_width * 8 + m_tokens * m_top_k * (m_hidden + 2 * m_width) * 8;
        plan.method = "per token in float64 on the CPU: softmax routing, top-k renormalised, "
                      "sum_j p_j * W_down[e_j] (silu(gate) * up)";
        const auto r = m_routing;
        const auto tokens = m_tokens, top_k = m_top_k, width = m_width;
        plan.chunk = [=](std::int64_t) {
            const auto x = in["x"].to(at::kDouble);
            auto out = at::zeros({tokens, x.size(1)}, x.options());
            add_experts_float64(out, x, in["w_gate_up"], in["w_down"], r, r.weight, top_k, width);
            return reference_chunk{0, 0, out};
        };
        return plan;
    }

    // bf16: gate/up, silu(gate), h = silu * up and every expert's output are stored in bf16,
    // each at its own magnitude, before the weighted sum over the top_k experts (as the model
    // computes it): more roundings, at larger magnitudes than the output's, than the default
    // bf16 bound (0.016 x RMS + 0.016 |ref|: two roundings of the output) allows. Every
    // operation computed exactly with only those stores rounded still lands outside it (2 of 30
    // seeds of the default job, worst 1.08x the bound); the path itself is within 10 % of that
    // (docs/correctness.md). atol doubles to 2^-5 x RMS; rel_l2 keeps 1e-2 (0.0046 measured).
    measure::tolerance tolerance() const override {
        return expert_stores_tolerance("moe_decode bf16 ffn: bf16 stores of gate/up, silu, h and "
                                       "each expert's output before the top-k sum "
                                       "(docs/correctness.md)");
    }

  protected:
    // Every token goes to its k experts; the model's norm_topk_prob = true (Qwen3-30B-A3B).
    at::Tensor run(const input_set& in, moe_path path, const call_context* ctx) const override {
        return model_ops::moe_ffn(in["x"], in["router_logits"], in["w_gate_up"], in["w_down"],
                                  m_top_k, true, path, ctx);
    }
    std::int64_t weight_matrices() const override { return 3; }
};

// part=block: the decoder's MoE block at decode time, from the residual stream x: RMSNorm, the
// router's linear (logits in x's dtype), the experts as part=ffn, and the residual add. native is
// model_ops::moe_block_native (kernels/moe.cu's one launch with its fused prologue: what the
// native decoder's MoE layers run); stock and generic take the norm and the router through
// libtorch's ops, then moe_ffn on the grouped matmul or the host loop, then x + the block.
//
// The routing is fixed by the shape through the inputs (declared_cost must know the experts
// read): token t's x is zero outside its group's slice of the hidden dimensions (block_levels),
// positive inside it; the router's value for expert e over group g is its level k
// (-64..63) / 16 times a power of two near 1 / (the group's expected sum of h). Each token's
// logits are then its group's levels times one positive sum: their order is the levels' in any
// precision, and neighbouring levels stay two bf16 ulps apart after the logits' rounding,
// so the top_k (<= 127) is the same on every device and in the float64 reference.
class moe_block_case final : public moe_decode_case {
  public:
    explicit moe_block_case(const case_args& a) : moe_decode_case(a) {
        if (m_top_k > 127)
            throw bad_input(fmt::format("moe_decode part=block: top_k={} is above 127, the "
                                        "distinct levels of its fixed routing; valid: 1..127",
                                        m_top_k));
        m_levels = block_levels(m_tokens, m_experts, m_hidden);
        m_routing = block_route(m_levels, m_tokens, m_experts, m_top_k);
        // the expected sum of h over a group's slice: n x mean(x / rms(x)), x uniform in
        // 0.5..1.5 (mean square 13/12) on n = hidden / groups of the hidden elements, zero
        // elsewhere. Only the logits' scale depends on it: the largest is 4 x (the sum x the
        // power of two), its bf16 spacing at most 1/32 of that sum, the levels' gap 1/16 of it
        const double n = static_cast<double>(m_hidden) / static_cast<double>(m_levels.groups);
        const double sum_h = std::sqrt(n * static_cast<double>(m_hidden) * 12.0 / 13.0);
        m_router_scale = std::ldexp(1.0 / 16.0, -static_cast<int>(std::lround(std::log2(sum_h))));
    }

    std::optional<std::string> unsupported(const std::string& variant,
                                           const backend::device& dev) const override {
        if (auto why = moe_decode_case::unsupported(variant, dev))
            return why;
        if (variant != "native")
            return std::nullopt;
        if (m_tokens > 8)
            return fmt::format("part=block: the fused block (norm, router and experts in one "
                               "launch) takes a decode step of 1..8 tokens, not {}",
                               m_tokens);
        if (auto why = model_ops::native_moe_unsupported(
                m_experts, m_top_k, m_hidden, m_width,
                static_cast<std::int64_t>(size_bytes(args().type)), m_tokens))
            return "part=block: " + *why;
        return std::nullopt;
    }

    json variant_facts(const std::string& variant) const override {
        auto f = moe_decode_case::variant_facts(variant);
        f["routing"] = fmt::format(
            "fixed per shape through the inputs: {} group(s) of hidden dimensions, each token's x "
            "zero outside its group's, the router constant over a group at a seeded level",
            m_levels.groups);
        f["block"] = "RMSNorm (eps 1e-6) of the residual stream, the router's linear in the "
                     "activations' dtype, the experts (norm_topk_prob), x + the block";
        if (variant == "native")
            f["path"] =
                "fourfold kernels/moe.cu: the one launch with its fused prologue (the norm, "
                "the router's dot products, a grid barrier, the routing, the experts and "
                "the residual add; model_ops::moe_block_native, the native decoder's MoE "
                "layers)";
        else
            f["norm_and_router"] = "libtorch's ops: " + model_ops::rms_norm_path() +
                                   ", then at::linear; moe_ffn; then x + the block";
        return f;
    }

    cost declared_cost() const override {
        const auto [e, t, k, h, w, active, experts] = counts();
        return {e * (active * 3 * w * h + t * h + h + experts * h), e * t * h,
                2 * t * (experts * h + k * (h * 2 * w + w * h)),
                "read the experts the routing reaches (gate/up and down), the router, the norm's "
                "weight and the tokens once; write the block's outputs (x + the block) once"};
    }

    input_set make_inputs(std::uint64_t seed) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        const auto groups = m_levels.groups;
        auto mask = at::zeros({m_tokens, m_hidden}, at::TensorOptions().dtype(at::kFloat));
        auto router = at::empty({m_experts, m_hidden}, at::TensorOptions().dtype(at::kDouble));
        for (std::int64_t g = 0; g < groups; ++g) {
            const auto lo = g * m_hidden / groups, hi = (g + 1) * m_hidden / groups;
            for (std::int64_t t = g; t < m_tokens; t += groups)
                mask[t].narrow(0, lo, hi - lo).fill_(1.0);
            for (std::int64_t e = 0; e < m_experts; ++e)
                router[e]
                    .narrow(0, lo, hi - lo)
                    .fill_(
                        m_levels.level[static_cast<std::size_t>(g)][static_cast<std::size_t>(e)] *
                        m_router_scale);
        }
        // positive inside the group (uniform 0.5..1.5), so every h there is, and so each token's
        // sum of h: the logits' order is the levels' for any x
        const auto x =
            seeded_uniform({m_tokens, m_hidden}, sub_seed(seed, 0), 0.5, 1.5, at::kFloat);
        return input_set()
            .add("x", (x * mask).to(type))
            .add("norm_weight", seeded_uniform({m_hidden}, sub_seed(seed, 3), 0.5, 1.5, type))
            .add("router", router.to(type))
            .add("w_gate_up", gate_up_weights(seed, type))
            .add("w_down", down_weights(seed, type));
    }

    // float64 from the block's own rounding points: h = RMSNorm(x) and the router's logits are
    // stored in x's dtype (the model computes them so, on every path); the routing is checked
    // against the declared one, then the experts as part=ffn's reference, plus x.
    reference_plan reference(const input_set& in) const override {
        reference_plan plan;
        plan.chunks = 1;
        plan.chunk_bytes_bound = 3 * m_hidden * m_width * 8 +
                                 m_tokens * (m_top_k + 2) * (m_hidden + 2 * m_width) * 8 +
                                 m_experts * m_hidden * 8;
        plan.method = "float64 on the CPU from the rounding points h and logits (stored in the "
                      "dtype): softmax routing, top-k renormalised, sum_j p_j * W_down[e_j] "
                      "(silu(gate) * up), plus x";
        const auto r = m_routing;
        const auto tokens = m_tokens, experts = m_experts, top_k = m_top_k, width = m_width;
        plan.chunk = [=](std::int64_t) {
            const auto type = in["x"].scalar_type();
            const auto x = in["x"].to(at::kDouble);
            const auto nw = in["norm_weight"].to(at::kDouble);
            const auto h = (x * at::rsqrt(x.pow(2).mean(-1, true) + k_block_eps) * nw)
                               .to(type)
                               .to(at::kDouble);
            const auto logits =
                at::matmul(h, in["router"].to(at::kDouble).t()).to(type).to(at::kDouble);
            const auto probs = at::softmax(logits, -1).contiguous();
            const auto* p = probs.data_ptr<double>();
            std::vector<double> weight(static_cast<std::size_t>(tokens * top_k));
            for (std::int64_t t = 0; t < tokens; ++t) {
                double sum = 0, kth = 0;
                for (std::int64_t j = 0; j < top_k; ++j) {
                    const auto e = r.expert[static_cast<std::size_t>(t * top_k + j)];
                    sum += p[t * experts + e];
                    kth = j == 0 ? p[t * experts + e] : std::min(kth, p[t * experts + e]);
                }
                // the declared top_k must be the float64 one: every other expert below them all
                for (std::int64_t e = 0, taken = 0; e < experts; ++e) {
                    const auto* first = &r.expert[static_cast<std::size_t>(t * top_k)];
                    const bool chosen = std::find(first, first + top_k, e) != first + top_k;
                    taken += chosen ? 1 : 0;
                    if (!chosen && p[t * experts + e] >= kth)
                        throw std::logic_error(fmt::format(
                            "moe_decode part=block: token {}'s float64 routing picks expert {} "
                            "over the declared ones (the fixed routing did not hold)",
                            t, e));
                }
                for (std::int64_t j = 0; j < top_k; ++j) {
                    const auto e = r.expert[static_cast<std::size_t>(t * top_k + j)];
                    weight[static_cast<std::size_t>(t * top_k + j)] = p[t * experts + e] / sum;
                }
            }
            auto out = x.clone();
            add_experts_float64(out, h, in["w_gate_up"], in["w_down"], r, weight, top_k, width);
            return reference_chunk{0, 0, out};
        };
        return plan;
    }

    // part=ffn's bound: the same stores of gate/up, silu, h and each expert's output
    measure::tolerance tolerance() const override {
        return expert_stores_tolerance(
            "moe_decode bf16 block: part=ffn's bound (docs/correctness.md)");
    }

  protected:
    at::Tensor run(const input_set& in, moe_path path, const call_context* ctx) const override {
        const auto& x = in["x"];
        if (path == moe_path::native) {
            auto y = model_ops::moe_block_native(x, in["norm_weight"], k_block_eps, in["router"],
                                                 in["w_gate_up"], in["w_down"], m_top_k, true, true,
                                                 *ctx);
            if (!y.defined())
                throw std::runtime_error("moe_decode part=block: the fused block's plan refused a "
                                         "shape unsupported() let through");
            return y;
        }
        const auto h = model_ops::rms_norm(x, in["norm_weight"], k_block_eps);
        const auto logits =
            model_ops::linear(h, in["router"], at::Tensor(), model_ops::op_path::stock);
        return x + model_ops::moe_ffn(h, logits, in["w_gate_up"], in["w_down"], m_top_k, true, path,
                                      ctx);
    }
    std::int64_t weight_matrices() const override { return 3; }

  private:
    static constexpr double k_block_eps = 1e-6; // Qwen3-30B-A3B's rms_norm_eps
    block_routing m_levels;
    double m_router_scale = 0;
};

// part=gate_up: the first grouped matmul alone, on rows already sorted by expert
// (model_ops::grouped_linear).
class moe_gate_up_case final : public moe_decode_case {
  public:
    using moe_decode_case::moe_decode_case;

    cost declared_cost() const override {
        const auto [e, t, k, h, w, active, experts] = counts();
        return {e * (active * 2 * w * h + t * k * h) + 4 * experts, e * t * k * 2 * w,
                2 * t * k * h * 2 * w,
                "read the gate/up weights of the experts the routing reaches, the sorted "
                "rows and the int32 offsets once; write the rows' gate/up outputs once"};
    }

    input_set make_inputs(std::uint64_t seed) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        return input_set()
            .add("rows",
                 seeded_normal({m_tokens * m_top_k, m_hidden}, sub_seed(seed, 0), 0.0, 1.0, type))
            .add("offsets", at::tensor(m_routing.offsets))
            .add("w_gate_up", gate_up_weights(seed, type));
    }

    reference_plan reference(const input_set& in) const override {
        reference_plan plan;
        plan.chunks = 1;
        plan.chunk_bytes_bound =
            3 * m_hidden * m_width * 8 + m_tokens * m_top_k * (m_hidden + 2 * m_width) * 8;
        plan.method = "per expert in float64 on the CPU: rows @ W_gate_up[e]^T";
        const auto r = m_routing;
        const auto experts = m_experts, width = m_width;
        plan.chunk = [=](std::int64_t) {
            const auto& w_gate_up = in["w_gate_up"];
            const auto rows = in["rows"].to(at::kDouble);
            auto out = at::empty({rows.size(0), 2 * width}, rows.options());
            std::int64_t start = 0;
            for (std::int64_t e = 0; e < experts; ++e) {
                const std::int64_t stop = r.offsets[static_cast<std::size_t>(e)];
                if (stop > start)
                    out.narrow(0, start, stop - start)
                        .copy_(at::matmul(rows.narrow(0, start, stop - start),
                                          w_gate_up[e].to(at::kDouble).t()));
                start = stop;
            }
            return reference_chunk{0, 0, out};
        };
        return plan;
    }

  protected:
    at::Tensor run(const input_set& in, moe_path path, const call_context* ctx) const override {
        return model_ops::grouped_linear(in["rows"], in["w_gate_up"], in["offsets"], path, ctx);
    }
    std::int64_t weight_matrices() const override { return 2; }
};

FOURFOLD_WORKLOAD(moe_decode_case, "moe_decode")
    .describe("one MoE expert-FFN step at decode time: tokens routed top-k over SwiGLU experts")
    .make_case([](const case_args& a) -> std::unique_ptr<moe_decode_case> {
        if (a.get_text("part") == "gate_up")
            return std::make_unique<moe_gate_up_case>(a);
        if (a.get_text("part") == "block")
            return std::make_unique<moe_block_case>(a);
        return std::make_unique<moe_ffn_case>(a);
    })
    .shape({"tokens", "experts", "top_k", "hidden", "width"})
    .param_int("tokens", 8, "tokens in the decode step", 1, 1 << 16)
    .param_int("experts", 128, "experts in the layer (num_experts)", 1, 1 << 12)
    .param_int("top_k", 8, "experts per token (num_experts_per_tok)", 1, 1 << 12)
    .param_int("hidden", 2048, "model width (hidden_size)", 1, 1 << 16)
    .param_int("width", 768, "expert width (moe_intermediate_size)", 1, 1 << 16)
    .param_text("part", "ffn", {"ffn", "gate_up", "block"},
                "ffn: routing, gate/up, SwiGLU, down, combine; gate_up: the first grouped "
                "matmul alone on rows already sorted by expert; block: the decoder's whole MoE "
                "block from the residual stream (RMSNorm, router, ffn, residual add; native: one "
                "launch)")
    .dtypes({dtype::bf16, dtype::fp32})
    .variant("stock", &moe_decode_case::stock,
             "at::_grouped_mm with int32 offsets on the device (no host sync)", false,
             {.features = {"grouped_mm"}, .ops = {"softmax", "topk", "index", "silu", "sum"}})
    .variant("generic", &moe_decode_case::generic,
             "offsets copied to the host, then one mm per active expert", /*host_sync=*/true,
             {.ops = {"softmax", "topk", "index", "silu", "sum", "matmul"}})
    .native_variant("native", &moe_decode_case::native,
                    "fourfold's kernels: routing on the device, each active expert's weights "
                    "read once (part=ffn: one launch, two on a device short of shared memory; "
                    "part=gate_up: a grouped GEMV)");

} // namespace
} // namespace fourfold::workloads
