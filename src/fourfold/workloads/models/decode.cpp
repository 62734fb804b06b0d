// decode: a whole decoder-only model (Llama 3, Qwen3, Qwen3-MoE) at batch 1. Throughput: a
// prefill of `ctx` tokens (time to first token, its own figure), then `tokens` greedy decode
// steps, each timed; tokens/s beside the bandwidth limit. Correctness: a reduced-depth twin (the
// first layers of the very model, same widths), teacher-forced, against the float64 CPU
// reference. Memory: the three levels' peaks over one whole decode of the real model. Built on
// the whole-model base (model_case.hpp): the resident model, the twin's reference, the checkpoint,
// the skips and the step timer are the base's; what is here is the decoder's.
#include "fourfold/backend/device.hpp"
#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/measure/statistics.hpp"
#include "fourfold/measure/step_timer.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/model_ops/linear_fp8.hpp"
#include "fourfold/workloads/models/decoder.hpp"
#include "fourfold/workloads/models/model_case.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace fourfold::workloads {
namespace {

using namespace models;

// The correctness twin: the first layers of the model, a prompt of k_twin_prompt tokens
// prefilled (their logits checked too), then decode steps teacher-forced up to k_twin_tokens.
constexpr std::int64_t k_twin_layers = 2;
constexpr std::int64_t k_twin_prompt = 8;
constexpr std::int64_t k_twin_tokens = 16;
// The KV cache is allocated in whole blocks of positions (aligned rows for the static mask).
constexpr std::int64_t k_cache_block = 64;

std::vector<std::int64_t> seeded_tokens(std::int64_t n, std::int64_t vocab, std::uint64_t seed) {
    xoshiro256 rng(seed);
    std::vector<std::int64_t> out(static_cast<std::size_t>(n));
    for (auto& t : out)
        t = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(vocab)));
    return out;
}

at::Tensor to_tensor(const std::vector<std::int64_t>& v) {
    auto t = at::empty({static_cast<std::int64_t>(v.size())}, at::TensorOptions().dtype(at::kLong));
    std::copy(v.begin(), v.end(), t.data_ptr<std::int64_t>());
    return t;
}

// The quantisation's own error (weights=fp8_row): the float64 reference of the dequantised
// model against the float64 reference of the model-dtype originals, no kernel involved; its
// budget is looser than the kernels' (the bf16 tolerance) and it is reported, not a check.
struct quantisation_check {
    at::Tensor original; // [rows, vocab] float64: the originals' reference logits
    double rel_l2_budget = 0, kl_budget = 0;
    std::string why;
    std::string error; // why it could not be computed (the verdict is not affected)
};

// Top-1 agreement, KL divergence and the largest logit error of the twin's logits against the
// reference, per position; the reference arrives in vocabulary slices and is gathered here
// (positions x vocab float64: 19 MB for 16 positions of a 151,936 vocabulary).
class logit_metrics final : public extra_metrics {
  public:
    logit_metrics(std::int64_t rows, std::int64_t vocab, double kl_max, double margin,
                  std::optional<quantisation_check> quantisation = std::nullopt)
        : m_rows(rows), m_vocab(vocab), m_kl_max(kl_max), m_margin(margin),
          m_quantisation(std::move(quantisation)) {}

    void add(const at::Tensor& out, const at::Tensor& ref, std::int64_t dim,
             std::int64_t start) override {
        if (!m_out.defined()) {
            m_out = at::empty({m_rows, m_vocab}, out.options());
            m_ref = at::empty({m_rows, m_vocab}, ref.options());
        }
        m_out.narrow(dim, start, out.size(dim)).copy_(out);
        m_ref.narrow(dim, start, ref.size(dim)).copy_(ref);
    }

    result finish() override {
        result r;
        if (!m_out.defined())
            return r;
        const auto out = m_out.to(at::kDouble);
        const auto log_p = at::log_softmax(m_ref, -1);
        const auto log_q = at::log_softmax(out, -1);
        const auto kl = (log_p.exp() * (log_p - log_q)).sum(-1); // KL(reference || output) per row
        const auto top_ref = m_ref.topk(2, -1);
        const auto ref_first = std::get<1>(top_ref).select(1, 0);
        const auto margin = std::get<0>(top_ref).select(1, 0) - std::get<0>(top_ref).select(1, 1);
        const auto agree = ref_first.eq(out.argmax(-1));
        const auto disagree = agree.logical_not().nonzero().view({-1});
        json rows = json::array();
        for (std::int64_t i = 0; i < disagree.numel(); ++i) {
            const auto row = disagree[i].item<std::int64_t>();
            const double m = margin[row].item<double>();
            rows.push_back(json{{"position", row}, {"reference_margin", m}});
            if (m > m_margin)
                r.failed_checks.push_back(fmt::format("top-1 token differs at position {} where "
                                                      "the reference leads by {:.4g} > {:.4g}",
                                                      row, m, m_margin));
        }
        const double kl_max = kl.max().item<double>();
        const auto row_rel_l2 = (out - m_ref).norm(2, {1}) / m_ref.norm(2, {1});
        json per_position = json::array();
        for (std::int64_t i = 0; i < m_rows; ++i)
            per_position.push_back(json{{"kl", kl[i].item<double>()},
                                        {"rel_l2", row_rel_l2[i].item<double>()},
                                        {"reference_margin", margin[i].item<double>()}});
        if (!(kl_max <= m_kl_max))
            r.failed_checks.push_back(
                fmt::format("KL divergence {:.4g} > {:.4g}", kl_max, m_kl_max));
        const auto contiguous = m_out.contiguous();
        const std::string bytes(
            static_cast<const char*>(contiguous.data_ptr()),
            static_cast<std::size_t>(contiguous.numel() * contiguous.element_size()));
        r.metrics = json{{"positions", m_rows},
                         {"top1_agreement", agree.to(at::kDouble).mean().item<double>()},
                         {"top1_disagreements", rows},
                         {"top1_margin_tolerance", m_margin},
                         {"kl_mean", kl.mean().item<double>()},
                         {"kl_max", kl_max},
                         {"kl_tolerance", m_kl_max},
                         {"max_abs_logit_error", (out - m_ref).abs().max().item<double>()},
                         {"logits_fnv1a64", fmt::format("{:016x}", fnv1a64(bytes))},
                         {"per_position", per_position}};
        if (m_quantisation)
            r.metrics["quantisation_error"] =
                m_quantisation->error.empty()
                    ? quantisation_error(*m_quantisation)
                    : json{{"error", "not computed: " + m_quantisation->error}};
        return r;
    }

  private:
    // m_ref (the dequantised model's reference) against the originals' reference
    json quantisation_error(const quantisation_check& q) const {
        const auto& orig = q.original;
        const auto log_p = at::log_softmax(orig, -1);
        const auto log_q = at::log_softmax(m_ref, -1);
        const auto kl = (log_p.exp() * (log_p - log_q)).sum(-1);
        const double rel = ((m_ref - orig).norm().item<double>() / orig.norm().item<double>());
        const double kl_max = kl.max().item<double>();
        const auto row_rel = (m_ref - orig).norm(2, {1}) / orig.norm(2, {1});
        return json{
            {"what", "the float64 reference of the dequantised model (scale * e4m3 weights) "
                     "against the float64 reference of the original job-dtype weights, over the "
                     "same twin and tokens: the quantisation's error alone, no kernel involved; "
                     "the kernels are checked against the dequantised model (the shared "
                     "metrics above)"},
            {"rel_l2", rel},
            {"rel_l2_max_position", row_rel.max().item<double>()},
            {"max_abs_logit_error", (m_ref - orig).abs().max().item<double>()},
            {"kl_mean", kl.mean().item<double>()},
            {"kl_max", kl_max},
            {"top1_agreement",
             orig.argmax(-1).eq(m_ref.argmax(-1)).to(at::kDouble).mean().item<double>()},
            {"budget", json{{"rel_l2", q.rel_l2_budget}, {"kl_max", q.kl_budget}, {"why", q.why}}},
            {"within_budget", rel <= q.rel_l2_budget && kl_max <= q.kl_budget},
            {"verdict_note", "reported beside the verdict, not part of it: the verdict is the "
                             "kernels' (against the dequantised model)"}};
    }

    std::int64_t m_rows, m_vocab;
    double m_kl_max, m_margin;
    std::optional<quantisation_check> m_quantisation;
    at::Tensor m_out, m_ref;
};

// What the native variant's step takes for attention and RMSNorm, for its records.
constexpr const char* native_attention =
    "kernels/decode_attention.cu: one query token over the cache positions 0..pos read from the "
    "device, the query heads of a kv head one block's rows, split over the context, the splits "
    "merged by log-sum-exp in the same launch (the last block of a kv head), fp32 accumulation";
constexpr const char* native_norm =
    "kernels/rmsnorm.cu: fp32 sums, the residual add and the embedding gather fused";

class decode_case final : public model_case<decoder_weights> {
  public:
    explicit decode_case(const case_args& a)
        : model_case(a), m_model(a.get_text("model")), m_source(resolve_model(m_model)),
          m_ctx(a.get_int("ctx")), m_tokens(a.get_int("tokens")),
          m_graph(a.get_text("mode") == "graph"),
          m_seed(static_cast<std::uint64_t>(a.get_int("init_seed"))),
          m_format(a.get_text("weights") == "fp8_row" ? weight_format::fp8_row
                                                      : weight_format::model) {
        const auto& c = m_source.config;
        if (m_ctx + m_tokens > c.max_positions)
            throw bad_input(fmt::format(
                "ctx={} + tokens={} = {} exceeds {}'s max_position_embeddings {}; "
                "choose ctx + tokens <= {}",
                m_ctx, m_tokens, m_ctx + m_tokens, m_model, c.max_positions, c.max_positions));
        // A checkpoint is validated whole (every header, name and shape) before anything runs.
        m_checkpoint =
            open_checkpoint(m_source.directory, m_source.has_weights, m_source.random_weights);
        if (m_checkpoint)
            check_checkpoint(c, *m_checkpoint);
    }

    const model_config& config() const { return m_source.config; }

    cost declared_cost() const override {
        const auto& c = config();
        const double e = static_cast<double>(size_bytes(args().type));
        const double kv = static_cast<double>(c.kv_elements_per_position()) * e;
        const double read = bytes_read_per_token();
        const double flops = 2.0 * static_cast<double>(c.params_read_per_token() - c.hidden) +
                             4.0 * static_cast<double>(c.layers * c.q_dim()) * mean_kv_length();
        return {read, kv + static_cast<double>(c.vocab) * e, flops,
                "one decode step at batch 1: weights read per token + KV cache read at the mean "
                "cache length; writes one KV position and the logits"};
    }

    // Prompt and twin tokens come from init_seed (not the run's --seed), so that every model
    // with the same vocabulary, preset or checkpoint, decodes the same tokens.
    input_set make_inputs(std::uint64_t) const override {
        const auto v = config().vocab;
        return input_set()
            .add("prompt", to_tensor(seeded_tokens(m_ctx, v, sub_seed(m_seed, 1))))
            .add("twin_tokens", to_tensor(seeded_tokens(k_twin_tokens, v, sub_seed(m_seed, 2))));
    }

    reference_plan reference(const input_set& in) const override {
        const auto model = last_model();
        const auto& tokens = in["twin_tokens"];
        const auto hidden_bytes = config().hidden * 8 + k_twin_tokens * 8;
        return chunked_reference(
            1, config().vocab, hidden_bytes,
            fmt::format(
                "the first {} layer(s) in float64 on the CPU over {} teacher-forced tokens in "
                "one causal pass, no KV cache; weights upcast from the job's values in "
                "blocks of at most {} MiB",
                twin_layers(), k_twin_tokens, k_reference_block_bytes >> 20),
            [this, model, tokens](std::int64_t start, std::int64_t length) {
                const auto& hidden = twin_reference(*model, tokens, reference_hidden_f64);
                return reference_logits_f64(*model->twin, hidden, start, length);
            });
    }

    std::optional<std::string> unsupported(const std::string& variant,
                                           const backend::device& dev) const override {
        const auto& c = config();
        const bool moe = c.has_moe();
        if (fp8()) {
            if (const auto why = dev.caps().missing("float8"))
                return "weights=fp8_row: float8_e4m3fn weights: " + *why;
            if (native_like(variant) && args().type != dtype::bf16)
                return fmt::format("weights=fp8_row: the FP8 GEMV takes bf16 activations, not "
                                   "{}; choose --dtype bf16",
                                   to_string(args().type));
            if (native_like(variant))
                if (const auto why = model_ops::linear_fp8_unavailable(dev))
                    return "weights=fp8_row: " + *why;
        }
        if (variant == "generic" && !moe)
            return fmt::format("{} is dense: generic differs from stock only in the MoE layers, so "
                               "stock is the one path here",
                               m_model);
        if (m_graph) {
            if (auto why = graph_capture_missing(dev))
                return why;
            if (variant == "generic")
                return "mode=graph: the generic MoE path copies the expert counts to the host in "
                       "every MoE layer, and a CUDA graph cannot capture a host sync";
            if (moe && variant == "stock" && args().type != dtype::bf16)
                return fmt::format("mode=graph: _grouped_mm has its fast path for bf16 only; in {} "
                                   "it loops over the groups with a host sync, which a CUDA graph "
                                   "cannot capture",
                                   to_string(args().type));
            if (moe && variant == "stock")
                if (const auto why = dev.caps().missing("grouped_mm_fast"))
                    return "mode=graph: " + *why;
        }
        if (variant == "stock" && moe)
            if (const auto why = dev.caps().missing("grouped_mm"))
                return "the " + variant + " MoE path needs at::_grouped_mm: " + *why;
        return memory_shortfall(dev, fmt::format("{} in {}", m_model, to_string(args().type)),
                                weights_bytes(), "KV cache", kv_cache_bytes());
    }

    // Logits of the reduced-depth twin drift from float64 by rounding in every projection; in
    // MoE layers a near-tie between the k-th and (k+1)-th expert can flip in bf16 and move that
    // position's logits by several percent. Random weights make the logits flat, so near-ties for
    // the top token are common too: only a top token the reference leads clearly must agree.
    // Calibrated (docs/performance.md) with 2-layer twins of llama3-8b and qwen3-30b-a3b in bf16
    // and fp32 on the CPU; fp16 scaled from bf16 by its 3 extra mantissa bits.
    struct decode_tolerance {
        measure::tolerance shared;
        double kl_max;
        double top1_margin;
    };
    decode_tolerance policy() const {
        const bool moe = config().has_moe();
        switch (args().type) {
        case dtype::fp32:
            return {
                {1e-4, 1e-3, 1e-3, "decode logits, fp32 twin: float32 accumulation"}, 1e-6, 1e-3};
        case dtype::fp16:
            return moe ? decode_tolerance{{1e-2, 0.1, 0.1,
                                           "decode logits, fp16 MoE twin: rounding, routing "
                                           "near-ties"},
                                          2e-3,
                                          0.1}
                       : decode_tolerance{
                             {5e-3, 5e-2, 5e-2,
                              "decode logits, fp16 twin: rounding in every projection"},
                             2e-4,
                             0.05};
        default:
            return moe ? decode_tolerance{{5e-2, 0.5, 0.5,
                                           "decode logits, bf16 MoE twin: rounding, routing "
                                           "near-ties"},
                                          1e-2,
                                          0.25}
                       : decode_tolerance{
                             {2.5e-2, 0.25, 0.25,
                              "decode logits, bf16 twin: rounding in every projection"},
                             1e-3,
                             0.25};
        }
    }

    measure::tolerance tolerance() const override { return policy().shared; }

    std::unique_ptr<extra_metrics> make_extra_metrics() const override {
        const auto p = policy();
        return std::make_unique<logit_metrics>(k_twin_tokens, config().vocab, p.kl_max,
                                               p.top1_margin);
    }

    // weights=fp8_row: the shared metrics check the kernels against the dequantised model's
    // reference (the job dtype's tolerance); metrics.quantisation_error holds that reference
    // against the originals' (the quantisation's own error and budget, not part of the verdict).
    std::unique_ptr<extra_metrics>
    make_variant_metrics(const std::string&, const input_set& cpu_inputs) const override {
        const auto p = policy();
        std::optional<quantisation_check> q;
        if (fp8()) {
            // outside the runner's guard of the reference: a failure here is said in the
            // metric, never a lost record
            try {
                q = quantisation(cpu_inputs["twin_tokens"]);
            } catch (const std::exception& e) {
                q = quantisation_check{};
                q->error = e.what();
            }
        }
        return std::make_unique<logit_metrics>(k_twin_tokens, config().vocab, p.kl_max,
                                               p.top1_margin, std::move(q));
    }

    json variant_facts(const std::string& variant) const override {
        const auto& c = config();
        json f{
            {"model", c.to_json()},
            {"weights",
             m_checkpoint ? fmt::format("checkpoint {}", m_checkpoint->directory().string())
                          : fmt::format("random, seed {} (init_seed {})", weights_seed(), m_seed)},
            {"weights_format", std::string(to_string(m_format))},
            {"weights_bytes", weights_bytes()},
            {"weights_bytes_read_per_token", weights_read_per_token()},
            {"kv_cache_bytes", kv_cache_bytes()},
            {"kv_cache_positions", cache_capacity()},
            {"kv_cache_bytes_per_position",
             static_cast<double>(c.kv_elements_per_position()) * element_bytes()},
            {"attention", native_like(variant) ? native_attention : attention_path()},
            {"rms_norm", native_like(variant) ? native_norm : rms_norm_path()},
            {"mode", native_like(variant)
                         ? (m_graph ? "graph: one decode step of fourfold's kernels captured as a "
                                      "CUDA graph, replayed per token"
                                    : "eager: fourfold's kernels launched per step")
                     : m_graph
                         ? "graph: one decode step captured as a CUDA graph, replayed per token; "
                           "attention over the whole cache with a position mask"
                         : "eager: ops launched per step; attention over the filled prefix"},
            {"sampling", native_like(variant)
                             ? "greedy: argmax of the logits on the device (kernels/argmax.cu), "
                               "the token written and the position advanced in the same launch"
                             : "greedy: softmax over the vocabulary in float32, argmax, on the "
                               "device"},
            {"correctness_twin",
             json{{"layers", twin_layers()},
                  {"tokens", k_twin_tokens},
                  {"prefill", k_twin_prompt},
                  {"decode_steps", k_twin_tokens - k_twin_prompt},
                  {"what",
                   "the first layers of this very model (same widths, same weights), its "
                   "final norm and LM head; prefill then teacher-forced decode steps in the "
                   "job's mode; logits of every position checked"}}},
            {"memory_pass", "the full model's session (weights, KV cache, captured step in graph "
                            "mode) made first; each call one whole decode: prefill, every decode "
                            "step"}};
        if (fp8()) {
            const auto fp = fp8_row_footprint(c);
            f["fp8"] =
                json{{"stored", fmt::format("float8_e4m3fn, a float32 scale per output row (amax / "
                                            "448): qkv, o, {}{}; the embedding, the norms{} in {}",
                                            c.has_moe() ? "the dense layers' gate_up and down"
                                                        : "gate_up, down",
                                            c.tie_embeddings ? "" : ", the LM head",
                                            c.has_moe() ? ", the MoE router and experts" : "",
                                            to_string(args().type))},
                     {"quantised", "on the device, one projection at a time as it is made (random) "
                                   "or loaded (checkpoint); only the fp8 tensors stay resident"},
                     {"fp8_weights", fp.weights},
                     {"scale_rows", fp.scales},
                     {"model_dtype_weights_bytes",
                      static_cast<double>(c.total_params()) * element_bytes()},
                     {"projections", projection_path(variant)}};
            if (c.has_moe())
                f["fp8"]["experts"] =
                    "the MoE experts and router stay in the job dtype: fourfold's MoE step "
                    "(kernels/moe.cu) and at::_grouped_mm take bf16 experts";
        }
        if (native_like(variant)) {
            f["decode_step"] =
                "fourfold's kernels: the embedding gather fused into the first RMSNorm; per layer "
                "RMSNorm (the residual add of an MoE block's output fused), the q/k/v GEMV, "
                "rope_kv (Qwen3's q/k norm, RoPE, the KV-cache append at the device-side "
                "position), decode_attention (+ its combine when split), the o GEMV with the "
                "residual as its bias, RMSNorm, then the gate/up GEMV, swiglu and the down GEMV "
                "with the residual as its bias (dense) or model_ops::moe_ffn (MoE); the final "
                "RMSNorm, the LM head GEMV, argmax. The GEMVs are model_ops::linear's native "
                "path (kernels/gemv.cu, what linear_decode's native variant times); the launches "
                "and plans of one step are in the throughput record's figures.native_step";
            if (fp8())
                f["decode_step"] = f["decode_step"].get<std::string>() +
                                   ". weights=fp8_row: the fp8 projections through "
                                   "model_ops::linear_fp8 (kernels/gemv_fp8.cu) instead, no "
                                   "prologue fused";
            f["prefill"] = fp8() ? "libtorch's ops (stock; fp8 projections dequantised per call): "
                                   "the FP8 GEMV takes 1..8 tokens"
                                 : "libtorch's ops (stock): the GEMV takes 1..8 tokens";
            if (variant == "native_fused")
                f["prologues"] = "the RMSNorms before q/k/v, gate/up and the LM head, and the "
                                 "SwiGLU before the down projection, inside those GEMVs "
                                 "(kernels/gemv.cu's prologue, linear_decode's prologue= "
                                 "variants time it) where the plan takes it (bf16 weights; the "
                                 "FP8 GEMV has none); RoPE, the q/k norms and the KV append "
                                 "inside decode attention (rope_kv's arithmetic, the same bits)";
        }
        if (c.has_moe())
            f["moe"] =
                native_like(variant)
                    ? "fourfold's MoE block in one launch (kernels/moe.cu, the fused prologue): "
                      "the RMSNorm, the router's GEMV, the routing, gate/up, SwiGLU, down, the "
                      "weighted combine and the residual add, no host sync "
                      "(model_ops::moe_block_native; moe_decode's native variant times the same "
                      "kernel from router logits, without the prologue); where the plan refuses "
                      "it, the norm, the router's GEMV and model_ops::moe_ffn"
                : variant == "generic"
                    ? "host loop: expert offsets copied to the host (a sync per MoE layer), "
                      "then per expert hit one at::mm for gate/up and one for down "
                      "(model_ops::moe_ffn, the code moe_decode's generic variant times)"
                    : "at::_grouped_mm over rows sorted by expert, group offsets computed and "
                      "kept on the device (no host sync) (model_ops::moe_ffn, the code "
                      "moe_decode's stock variant times)";
        return f;
    }

    throughput_result measure_throughput(const std::string& variant, const input_set& in,
                                         const throughput_context& tc) const override {
        const auto model = acquire(in["prompt"].device());
        decoder_session s(model->weights, cache_capacity(), paths(variant), call_context(tc.dev));
        if (m_graph)
            s.capture(tc.dev);
        const auto& prompt = in["prompt"];
        // A round: the prefill (time to first token, sampling included), then every decode step.
        const auto timing = measure::time_steps(
            tc.dev, tc.timing.stop,
            {[&] { s.prefill(prompt); }, [&](std::int64_t) { s.step(); }, m_tokens});
        const auto& step_ms = timing.step_ms;

        const auto stats = measure::summarize(step_ms);
        const auto prefill = measure::summarize(timing.lead_ms);
        const double per_token = bytes_read_per_token();
        const double weights_read = weights_read_per_token();
        const double limit =
            tc.bandwidth_bytes_per_s > 0 ? tc.bandwidth_bytes_per_s / per_token : 0;
        const double tokens_per_s = stats.median > 0 ? 1000.0 / stats.median : 0;
        double total_ms = 0;
        for (const auto v : step_ms)
            total_ms += v;
        const auto generated = s.tokens().narrow(0, m_ctx, m_tokens + 1).to(at::kCPU);
        std::vector<std::int64_t> gen(generated.data_ptr<std::int64_t>(),
                                      generated.data_ptr<std::int64_t>() + generated.numel());

        throughput_result r;
        r.unit = "tokens/s";
        r.context_axis = "ctx";
        r.step_unit = "ms/token";
        r.figures = timing.to_json(); // rounds, stop, stop_state, stop_detail, elapsed_s
        r.figures.update(json{
            {"ctx", m_ctx},
            {"mode", m_graph ? "graph" : "eager"},
            // eager: every op of a step is launched from the host, so a slower host can slow the
            // steps (compare holds such a figure to the host round trip measured beside it)
            {"host_paced", !m_graph},
            {"decode_steps", m_tokens},
            {"tokens_per_s", tokens_per_s},
            {"tokens_per_s_basis", "1000 / median ms per token"},
            {"tokens_per_s_mean",
             total_ms > 0 ? 1000.0 * static_cast<double>(step_ms.size()) / total_ms : 0},
            {"ms_per_token", stats.to_json()},
            {"prefill_ms", prefill.median},
            {"prefill_ms_stats", prefill.to_json()},
            {"prefill_tokens_per_s",
             prefill.median > 0 ? 1000.0 * static_cast<double>(m_ctx) / prefill.median : 0},
            {"timing", timing.method("prefill includes sampling the first token")},
            {"bytes_read_per_token", per_token},
            {"bandwidth_bytes_per_s", tc.bandwidth_bytes_per_s},
            {"bandwidth_limit_tokens_per_s", limit},
            {"bandwidth_limit_formula",
             fmt::format(
                 "measured copy bandwidth / (weights read per token {} B + KV cache {} B per "
                 "position x mean cache length {:.1f}); weights read = embedding row, attention, "
                 "norms, {}LM head{}",
                 weights_read,
                 static_cast<double>(config().kv_elements_per_position()) * element_bytes(),
                 mean_kv_length(),
                 config().has_moe() ? "router and the top-k experts of each MoE layer, " : "MLPs, ",
                 fp8() ? " (weights=fp8_row: 1 B per quantised weight + 4 B per row scale, the "
                         "rest in the job dtype)"
                       : "")},
            {"weights_format", std::string(to_string(m_format))},
            {"pct_of_bandwidth_limit", limit > 0 ? 100.0 * tokens_per_s / limit : 0},
            {"kv_cache_bytes", s.kv_cache_bytes()},
            {"generated_tokens", gen}});
        if (!s.native_step_facts().empty())
            r.figures["native_step"] = s.native_step_facts();
        if (fp8())
            r.figures["fp8_projections"] = projection_path(variant);
        r.samples_ms = timing.step_ms;
        return r;
    }

    // The session (KV cache, and in graph mode the captured step with its memory pool) is made
    // here, before the pass takes its baseline: its bytes count in the peaks, and no graph is
    // captured while the sampler thread polls the driver.
    std::function<void()> memory_call(const std::string& variant, const input_set& in,
                                      backend::device& dev) const override {
        if (!own_variant(variant))
            return {}; // a test's variant: the runner calls its function
        const auto model = acquire(in["prompt"].device());
        auto s = std::make_shared<decoder_session>(model->weights, cache_capacity(), paths(variant),
                                                   call_context(dev));
        if (m_graph)
            s->capture(dev);
        return [s, model, steps = m_tokens, prompt = in["prompt"]] {
            s->prefill(prompt);
            for (std::int64_t i = 0; i < steps; ++i)
                s->step();
        };
    }

    at::Tensor stock(const call_context& ctx, const input_set& in) const {
        return twin_logits(ctx, in, paths("stock"));
    }
    at::Tensor generic(const call_context& ctx, const input_set& in) const {
        return twin_logits(ctx, in, paths("generic"));
    }
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        return twin_logits(ctx, in, paths("native"));
    }
    at::Tensor native_fused(const call_context& ctx, const input_set& in) const {
        return twin_logits(ctx, in, paths("native_fused"));
    }

  protected:
    std::string weights_key() const override {
        return fmt::format("{}|{}|{}|{}", m_model, to_string(args().type), m_seed,
                           to_string(m_format));
    }
    decoder_weights build_weights(c10::Device device) const override {
        const auto type = backend::scalar_type_or_throw(args().type);
        return m_checkpoint
                   ? load_weights(config(), *m_checkpoint, type, device, m_format, twin_layers())
                   : random_weights(config(), type, device, weights_seed(), m_format,
                                    twin_layers());
    }
    decoder_weights make_twin(const decoder_weights& w) const override {
        return w.first_layers(k_twin_layers).to_cpu();
    }

  private:
    double element_bytes() const { return static_cast<double>(size_bytes(args().type)); }
    std::int64_t twin_layers() const { return std::min(k_twin_layers, config().layers); }
    std::int64_t cache_capacity() const {
        return (m_ctx + m_tokens + k_cache_block - 1) / k_cache_block * k_cache_block;
    }
    double mean_kv_length() const {
        return static_cast<double>(m_ctx) + static_cast<double>(m_tokens - 1) / 2.0;
    }
    bool fp8() const { return m_format == weight_format::fp8_row; }
    // the stored bytes of `params` weights: fp8_row's quantised projections (every one of them
    // is among the weights stored and among those read each token: attention, dense MLPs,
    // untied LM head) 1 B each and their scales 4 B a row, the rest in the job dtype
    double stored_bytes(std::int64_t params) const {
        if (!fp8())
            return static_cast<double>(params) * element_bytes();
        const auto fp = fp8_row_footprint(config());
        return static_cast<double>(params - fp.weights) * element_bytes() +
               static_cast<double>(fp.weights) + 4.0 * static_cast<double>(fp.scales);
    }
    double weights_bytes() const { return stored_bytes(config().total_params()); }
    double weights_read_per_token() const { return stored_bytes(config().params_read_per_token()); }
    // how a variant computes the fp8 projections, for the records
    static std::string projection_path(const std::string& variant) {
        if (native_like(variant))
            return "model_ops::linear_fp8: fourfold's FP8 GEMV (kernels/gemv_fp8.cu, what "
                   "fp8_linear's native_fp8_row times), the scale on each fp32 sum, the residual "
                   "as the o and down projections' bias";
        return "generic PyTorch: dequantised in every call (fp8 -> float32, times the row "
               "scale, -> job dtype) then at::linear (model_ops::linear_fp8_dequantised, "
               "fp8_linear's dequant_row); not at::_scaled_mm, which quantises the activations "
               "to fp8 too (another model) and was slower than bf16 at::linear at batch 1 "
               "(fp8_linear, issue 15)";
    }
    // The quantisation's error: the dequantised twin's reference (made here as reference()
    // makes it, and shared with it) against the originals' reference, computed once per case.
    quantisation_check quantisation(const at::Tensor& tokens) const {
        const auto model = last_model();
        (void)twin_reference(*model, tokens, reference_hidden_f64);
        if (!m_original_logits.defined()) {
            const auto orig = model->twin->with_originals();
            m_original_logits =
                reference_logits_f64(orig, reference_hidden_f64(orig, tokens), 0, config().vocab);
        }
        quantisation_check q;
        q.original = m_original_logits;
        const bool moe = config().has_moe();
        q.rel_l2_budget = moe ? 0.2 : 0.1;
        q.kl_budget = moe ? 5e-2 : 1e-2;
        q.why = fmt::format(
            "one e4m3 projection with per-row scales is about 2.6 % rel L2 from its original "
            "(e4m3fn rounding emulated over Gaussian weights, K = 64..4096); the twin's {} "
            "layers and its LM head compound to about 4 %, so {:.2g} is 2.5x that{}; KL {:.2g} "
            "is twice 1/2 Var of a 0.1 error on unit-scale logits. Estimates, not yet "
            "calibrated on a device",
            twin_layers(), q.rel_l2_budget,
            moe ? ", doubled for MoE routing near-ties (an expert chosen differently)" : "",
            q.kl_budget);
        return q;
    }
    double kv_cache_bytes() const {
        return static_cast<double>(config().kv_elements_per_position() * cache_capacity()) *
               element_bytes();
    }
    double bytes_read_per_token() const {
        return weights_read_per_token() + static_cast<double>(config().kv_elements_per_position()) *
                                              mean_kv_length() * element_bytes();
    }
    std::uint64_t weights_seed() const { return random_weights_seed(m_seed); }
    static bool native_like(const std::string& variant) {
        return variant == "native" || variant == "native_fused";
    }
    static bool own_variant(const std::string& variant) {
        return variant == "stock" || variant == "generic" || native_like(variant);
    }
    // The model_ops paths a variant takes: libtorch's own ops, the MoE layers through the
    // grouped matmul (stock) or the host loop (generic); native: native_decoder_paths().
    static decoder_paths paths(const std::string& variant) {
        if (!own_variant(variant))
            throw std::invalid_argument(
                "decode runs whole decodes for stock, generic and native only, not " + variant);
        if (native_like(variant)) {
            auto p = native_decoder_paths();
            p.fuse_prologues = variant == "native_fused";
            return p;
        }
        return {variant == "generic" ? moe_path::host_loop : moe_path::grouped_mm};
    }

    at::Tensor twin_logits(const call_context& ctx, const input_set& in,
                           decoder_paths paths) const {
        const auto& tokens = in["twin_tokens"];
        const auto model = acquire(tokens.device());
        auto twin =
            std::make_shared<const decoder_weights>(model->weights->first_layers(twin_layers()));
        decoder_session s(twin, k_cache_block, paths, ctx);
        std::vector<at::Tensor> rows{s.prefill_teacher_forced(tokens, k_twin_prompt)};
        if (m_graph)
            s.capture(ctx.device());
        for (std::int64_t p = k_twin_prompt; p < k_twin_tokens; ++p) {
            s.step();
            rows.push_back(s.logits().clone());
        }
        if (!s.native_step_facts().empty())
            ctx.fact("native_step_twin",
                     json{{"layers", twin_layers()}, {"step", s.native_step_facts()}});
        return at::cat(rows, 0);
    }

    std::string m_model;
    model_source m_source;
    std::int64_t m_ctx, m_tokens;
    bool m_graph;
    std::uint64_t m_seed;
    weight_format m_format;
    std::unique_ptr<checkpoint> m_checkpoint;
    mutable at::Tensor m_original_logits; // fp8_row: the originals' reference logits
};

FOURFOLD_WORKLOAD(decode_case, "decode")
    .describe("a whole decoder model at batch 1 (Llama 3, Qwen3, Qwen3-MoE): prefill, then greedy "
              "decode steps; tokens/s beside the bandwidth limit")
    .param_text("model", "tiny-llama", {},
                "a preset (llama3-8b, qwen3-8b, qwen3-30b-a3b, tiny-llama, tiny-qwen3, "
                "tiny-qwen3-moe) or a directory with a Hugging Face config.json and *.safetensors")
    .param_int("ctx", 512, "context length: prompt tokens prefilled before decoding", 1, 1 << 20)
    .param_int("tokens", 64, "decode steps timed per round", 1, 1 << 16)
    .param_text("mode", "eager", {"eager", "graph"},
                "eager: ops launched per step; graph: one decode step captured as a CUDA graph and "
                "replayed")
    .param_int("init_seed", 1,
               "seed of the random weights and of the prompt (fixed per case, not --seed, so every "
               "model sees the same tokens)",
               0, std::numeric_limits<std::int32_t>::max())
    .param_text("weights", "model", {"model", "fp8_row"},
                "model: every weight in the job dtype; fp8_row: the projections (q/k/v, o, dense "
                "MLPs, an untied LM head) stored as float8_e4m3fn with a float32 scale per output "
                "row, quantised from the job-dtype weights on load (MoE experts stay in the job "
                "dtype); the case and its reference are the fp8 model")
    .omit_at_default()
    .dtypes({dtype::bf16, dtype::fp16, dtype::fp32})
    .ledgers(ledger_set::of({ledger::throughput, ledger::correctness, ledger::memory}))
    .variant("stock", &decode_case::stock,
             "libtorch's own ops; MoE layers through at::_grouped_mm with device-side offsets",
             false, {.ops = {"matmul", "softmax", "silu", "index"}})
    .variant(
        "generic", &decode_case::generic,
        "MoE layers through a host loop over the experts hit (expert counts copied to the host)",
        true, {.ops = {"matmul", "softmax", "silu", "index"}})
    .native_variant("native", &decode_case::native,
                    "fourfold's kernels for the decode step (RMSNorm, rope_kv, decode attention, "
                    "SwiGLU, argmax) and the native GEMV for every projection; MoE layers through "
                    "fourfold's MoE step (kernels/moe.cu)")
    .native_variant("native_fused", &decode_case::native_fused,
                    "native, with the RMSNorms before q/k/v, gate/up and the LM head and the "
                    "SwiGLU before the down projection computed inside those GEMVs (their "
                    "prologue: one launch each) where the GEMV's plan takes it, and RoPE with "
                    "the KV append inside decode attention");

} // namespace
} // namespace fourfold::workloads
