#include "fourfold/workloads/models/decoder_session.hpp"

#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/workloads/model_ops/linear.hpp"
#include "fourfold/workloads/model_ops/linear_fp8.hpp"
#include "fourfold/workloads/model_ops/rms_norm.hpp"
#include "fourfold/workloads/model_ops/softmax.hpp"
#include "fourfold/workloads/model_ops/swiglu.hpp"
#include "fourfold/workloads/models/rope.hpp"
#include "fourfold/workloads/native.hpp"

#include <ATen/ATen.h>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/argmax.hpp"
#include "fourfold/kernels/decode_attention.hpp"
#include "fourfold/kernels/gemv.hpp"
#include "fourfold/kernels/gemv_fp8.hpp"
#include "fourfold/kernels/rmsnorm.hpp"
#include "fourfold/kernels/rope_kv.hpp"
#include "fourfold/kernels/swiglu.hpp"
#endif

namespace fourfold::workloads::models {
namespace {

using at::Tensor;

using model_ops::rms_norm;

// x [T, heads, head_dim]; cos, sin [T, 1, head_dim] in x's dtype. Hugging Face's rotate_half.
Tensor apply_rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    const auto half = x.size(-1) / 2;
    const auto rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

// Attention written out (builds without a public SDPA, and its twin in the reference): q
// [Tq, heads, head_dim] grouped over the kv heads by broadcasting, no repeat of k and v.
// k, v [kv_heads, L, head_dim]; `causal` masks key j > query i (Tq == L); `mask` [L] bool
// keeps the positions where it is true.
[[maybe_unused]] Tensor explicit_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                           std::int64_t groups, bool causal, const Tensor& mask,
                                           double scale) {
    const auto tq = q.size(0), kv_heads = k.size(0), hd = q.size(2), len = k.size(1);
    const auto qg = q.reshape({tq, kv_heads, groups, hd}).permute({1, 2, 0, 3}); // [KVH, G, Tq, hd]
    auto scores = at::matmul(qg, k.unsqueeze(1).transpose(-1, -2)).mul_(scale);  // [KVH, G, Tq, L]
    const double neg_inf = -std::numeric_limits<double>::infinity();
    if (causal)
        scores.masked_fill_(at::ones({tq, len}, q.options().dtype(at::kBool)).triu(1), neg_inf);
    if (mask.defined())
        scores.masked_fill_(mask.logical_not(), neg_inf);
    const auto p = model_ops::softmax(scores, model_ops::op_path::stock, nullptr, at::kFloat)
                       .to(q.scalar_type());
    return at::matmul(p, v.unsqueeze(1))
        .permute({2, 0, 1, 3})
        .reshape({tq, kv_heads * groups * hd});
}

#if FOURFOLD_HAS_SDPA
Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
            bool causal, double scale, bool gqa) {
#if FOURFOLD_TORCH_AT_LEAST(2, 5)
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale, gqa);
#elif FOURFOLD_TORCH_AT_LEAST(2, 1)
    (void)gqa;
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal, scale);
#else
    (void)gqa;
    (void)scale; // 2.0 has no scale argument; its default 1/sqrt(head_dim) is the one used
    return at::scaled_dot_product_attention(q, k, v, mask, 0.0, causal);
#endif
}
#endif

// Prefill attention: q [T, heads, hd], k/v [kv_heads, T, hd], causal. Returns [T, q_dim].
Tensor attention_prefill(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t groups,
                         double scale) {
#if FOURFOLD_HAS_SDPA
    const auto t = q.size(0);
    auto kh = k.unsqueeze(0), vh = v.unsqueeze(0);
#if !FOURFOLD_TORCH_AT_LEAST(2, 5)
    if (groups > 1) {
        kh = kh.repeat_interleave(groups, 1);
        vh = vh.repeat_interleave(groups, 1);
    }
#endif
    const auto out =
        sdpa(q.transpose(0, 1).unsqueeze(0), kh, vh, std::nullopt, true, scale, groups > 1);
    return out.squeeze(0).transpose(0, 1).reshape({t, q.size(1) * q.size(2)});
#else
    return explicit_attention(q, k, v, groups, true, Tensor(), scale);
#endif
}

// Decode attention for one token: q [1, heads, hd] folded to [1, kv_heads, groups, hd] so the
// query heads that share a kv head become that head's query rows (no repeat of the cache).
// k/v [kv_heads, L, hd]; mask [L] bool or undefined.
Tensor attention_decode(const Tensor& q, const Tensor& k, const Tensor& v, std::int64_t groups,
                        const Tensor& mask, double scale) {
#if FOURFOLD_HAS_SDPA
    const auto kv_heads = k.size(0), hd = q.size(2);
    std::optional<Tensor> m;
    if (mask.defined())
        m = mask.view({1, 1, 1, mask.size(0)});
    const auto out = sdpa(q.reshape({1, kv_heads, groups, hd}), k.unsqueeze(0), v.unsqueeze(0), m,
                          false, scale, false);
    return out.reshape({1, kv_heads * groups * hd});
#else
    return explicit_attention(q, k, v, groups, false, mask, scale);
#endif
}

} // namespace

std::string attention_path() {
#if FOURFOLD_HAS_SDPA
    return fmt::format(
        "at::scaled_dot_product_attention (backend chosen by libtorch {}.{}); prefill causal{}; "
        "decode with the query heads of each kv head folded into its query rows",
        TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR,
        FOURFOLD_TORCH_AT_LEAST(2, 5) ? " with enable_gqa" : " with k/v repeated per query head");
#else
    return fmt::format(
        "explicit softmax(q k^T / sqrt(d)) v, float32 softmax, grouped over kv heads "
        "by broadcasting (libtorch {}.{} has no public scaled_dot_product_attention)",
        TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR);
#endif
}

std::string rms_norm_path() {
    return model_ops::rms_norm_path();
}

decoder_paths native_decoder_paths() {
    decoder_paths p;
    p.moe = moe_path::native;
    p.linear = model_ops::op_path::native;
    p.step = model_ops::op_path::native;
    p.prefill_linear = model_ops::op_path::stock;
    return p;
}

decoder_session::decoder_session(std::shared_ptr<const decoder_weights> weights,
                                 std::int64_t capacity, moe_path moe)
    : decoder_session(std::move(weights), capacity, decoder_paths{moe}) {}

decoder_session::decoder_session(std::shared_ptr<const decoder_weights> weights,
                                 std::int64_t capacity, decoder_paths paths,
                                 std::optional<call_context> ctx)
    : m_w(std::move(weights)), m_capacity(capacity), m_paths(paths), m_ctx(ctx) {
    const auto& c = m_w->config;
    if (capacity < 1)
        throw std::invalid_argument("decoder_session: capacity must be >= 1");
    using model_ops::op_path;
    if (!m_ctx && (paths.linear == op_path::native || paths.softmax == op_path::native ||
                   paths.step == op_path::native || prefill_linear() == op_path::native))
        throw std::invalid_argument("decoder_session: a native path needs a call context");
    if (paths.step == op_path::composite)
        throw std::invalid_argument("decoder_session: the decode step is stock or native");
    const auto opts = at::TensorOptions().device(m_w->device());
    m_k = at::zeros({c.layers, c.kv_heads, capacity, c.head_dim}, opts.dtype(m_w->dtype()));
    m_v = at::zeros_like(m_k);
    const auto freqs = at::outer(at::arange(capacity, opts.dtype(at::kFloat)),
                                 rope_inv_freq_tensor(c, at::kFloat).to(m_w->device()));
    // computed in float32 and rounded to the job dtype once, as Hugging Face rounds them per use
    const auto emb = at::cat({freqs, freqs}, -1);
    m_cos = emb.cos().to(m_w->dtype());
    m_sin = emb.sin().to(m_w->dtype());
    m_seq = at::zeros({capacity + 1}, opts.dtype(at::kLong));
    m_pos = at::zeros({1}, opts.dtype(at::kLong));
    m_positions = at::arange(capacity, opts.dtype(at::kLong));
    m_logits = at::zeros({1, c.vocab}, opts.dtype(m_w->dtype()));
    if (paths.step == op_path::native) {
#if FOURFOLD_WITH_KERNELS
        // The workspaces a native step's kernels are planned for, made once: a launch allocates
        // nothing, and a captured step keeps their addresses.
        const auto& lim = native::limits(*m_ctx);
        kernels::decode_attention_args aa;
        aa.heads = c.heads;
        aa.kv_heads = c.kv_heads;
        aa.head_dim = c.head_dim;
        aa.capacity = capacity;
        aa.pos = m_pos.data_ptr<std::int64_t>();
        const auto ap = kernels::plan_decode_attention(aa, lim);
        if (!ap.valid.empty())
            throw std::invalid_argument("decoder_session: native decode attention: " + ap.valid);
        // zeroed once: the attention kernel's per-head counters live in it (they reset
        // themselves at the end of every launch)
        m_attention_workspace =
            at::zeros({std::max<std::int64_t>(1, ap.workspace_bytes / 4)}, opts.dtype(at::kFloat));
        kernels::argmax_args ga;
        ga.n = c.vocab;
        ga.tokens = m_seq.data_ptr<std::int64_t>();
        const auto gp = kernels::plan_argmax(ga, lim);
        if (!gp.valid.empty())
            throw std::invalid_argument("decoder_session: native argmax: " + gp.valid);
        m_argmax_workspace = at::zeros({gp.workspace_bytes}, opts.dtype(at::kByte));
#else
        throw std::invalid_argument(
            "decoder_session: a native decode step needs a build with native kernels");
#endif
    }
}

decoder_session::~decoder_session() = default;

std::int64_t decoder_session::kv_cache_bytes() const {
    return 2 * m_k.numel() * static_cast<std::int64_t>(m_k.element_size());
}

bool decoder_session::captured() const {
    return m_step.captured();
}

at::Tensor decoder_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale,
                          const at::Tensor& bias, model_ops::op_path path,
                          const call_context* ctx) {
    if (!scale.defined())
        return model_ops::linear(x, w, bias, path, ctx);
    if (path != model_ops::op_path::native)
        return model_ops::linear_fp8_dequantised(x, w, scale, bias);
    if (!ctx)
        throw std::invalid_argument("decoder_linear: the native FP8 GEMV needs a call context");
    return model_ops::linear_fp8(x, w, scale, bias, *ctx);
}

at::Tensor decoder_mlp(const model_config& c, const layer_weights& lw, std::int64_t layer,
                       const at::Tensor& h, const decoder_paths& paths, const call_context* ctx) {
    if (!c.is_moe_layer(layer)) {
        const auto gu =
            decoder_linear(h, lw.gate_up, lw.gate_up_scale, Tensor(), paths.linear, ctx);
        return decoder_linear(model_ops::swiglu(gu), lw.down, lw.down_scale, Tensor(), paths.linear,
                              ctx);
    }
    auto project = [&](const at::Tensor& x, const at::Tensor& w) {
        return model_ops::linear(x, w, Tensor(), paths.linear, ctx);
    };
    // Qwen3-MoE: the router in the activations' dtype, then the block moe_decode times.
    return model_ops::moe_ffn(h, project(h, lw.router), lw.experts_gate_up, lw.experts_down,
                              c.experts_per_token, c.norm_topk, paths.moe, ctx);
}

at::Tensor decoder_session::project(const at::Tensor& x, const at::Tensor& w,
                                    const at::Tensor& scale) const {
    return project(x, w, scale, m_paths.linear);
}

at::Tensor decoder_session::project(const at::Tensor& x, const at::Tensor& w,
                                    const at::Tensor& scale, model_ops::op_path path) const {
    return decoder_linear(x, w, scale, Tensor(), path, context());
}

at::Tensor decoder_session::probabilities(const at::Tensor& logits) const {
    return model_ops::softmax(logits, m_paths.softmax, context(), at::kFloat);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor>
decoder_session::attention_inputs(const layer_weights& lw, const at::Tensor& x,
                                  const at::Tensor& cos, const at::Tensor& sin,
                                  model_ops::op_path linear) const {
    const auto& c = m_w->config;
    const auto t = x.size(0);
    const auto qkv = project(rms_norm(x, lw.input_norm, c.rms_eps), lw.qkv, lw.qkv_scale, linear);
    auto q = qkv.narrow(1, 0, c.q_dim()).view({t, c.heads, c.head_dim});
    auto k = qkv.narrow(1, c.q_dim(), c.kv_dim()).view({t, c.kv_heads, c.head_dim});
    const auto v =
        qkv.narrow(1, c.q_dim() + c.kv_dim(), c.kv_dim()).view({t, c.kv_heads, c.head_dim});
    if (c.qk_norm) {
        q = rms_norm(q, lw.q_norm, c.rms_eps);
        k = rms_norm(k, lw.k_norm, c.rms_eps);
    }
    return {apply_rope(q, cos, sin), apply_rope(k, cos, sin), v};
}

at::Tensor decoder_session::forward_prefill(const at::Tensor& tokens, bool all_logits) {
    const auto& c = m_w->config;
    const auto t = tokens.size(0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    const auto groups = c.heads / c.kv_heads;
    auto x = m_w->embed.index_select(0, tokens);
    const auto cos = m_cos.narrow(0, 0, t).unsqueeze(1);
    const auto sin = m_sin.narrow(0, 0, t).unsqueeze(1);
    auto paths = m_paths;
    paths.linear = prefill_linear();
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto& lw = m_w->layers[static_cast<std::size_t>(l)];
        const auto [q, k, v] = attention_inputs(lw, x, cos, sin, paths.linear);
        const auto kt = k.transpose(0, 1), vt = v.transpose(0, 1); // [kv_heads, T, hd]
        m_k[l].narrow(1, 0, t).copy_(kt);
        m_v[l].narrow(1, 0, t).copy_(vt);
        x = x +
            project(attention_prefill(q, kt, vt, groups, scale), lw.o, lw.o_scale, paths.linear);
        x = x +
            decoder_mlp(c, lw, l, rms_norm(x, lw.post_attention_norm, c.rms_eps), paths, context());
    }
    if (!all_logits)
        x = x.narrow(0, t - 1, 1);
    return project(rms_norm(x, m_w->final_norm, c.rms_eps), m_w->lm_head, m_w->lm_head_scale,
                   paths.linear);
}

at::Tensor decoder_session::layer_step(const layer_weights& lw, std::int64_t layer, at::Tensor x,
                                       const at::Tensor& cos, const at::Tensor& sin,
                                       bool static_shapes, const at::Tensor& mask) {
    const auto& c = m_w->config;
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    const auto [q, k, v] = attention_inputs(lw, x, cos, sin, m_paths.linear);
    auto kc = m_k[layer], vc = m_v[layer];
    // The new key and value go in at the device-side position: no host value in the step.
    kc.index_copy_(1, m_pos, k.transpose(0, 1));
    vc.index_copy_(1, m_pos, v.transpose(0, 1));
    if (!static_shapes) {
        // Eager: attend over the filled prefix only, its length known on the host.
        kc = kc.narrow(1, 0, m_host_pos + 1);
        vc = vc.narrow(1, 0, m_host_pos + 1);
    }
    x = x +
        project(attention_decode(q, kc, vc, c.heads / c.kv_heads, mask, scale), lw.o, lw.o_scale);
    return x + decoder_mlp(c, lw, layer, rms_norm(x, lw.post_attention_norm, c.rms_eps), m_paths,
                           context());
}

void decoder_session::step_body(bool static_shapes) {
    if (m_paths.step == model_ops::op_path::native)
        return step_native();
    const auto& c = m_w->config;
    const auto token = m_seq.index_select(0, m_pos);
    auto x = m_w->embed.index_select(0, token);
    const auto cos = m_cos.index_select(0, m_pos).unsqueeze(1);
    const auto sin = m_sin.index_select(0, m_pos).unsqueeze(1);
    // Static shapes (a captured step): attention over the whole cache, positions after the
    // current one masked out, so the same kernels serve every position.
    const auto mask = static_shapes ? m_positions.le(m_pos) : Tensor();
    for (std::int64_t l = 0; l < c.layers; ++l)
        x = layer_step(m_w->layers[static_cast<std::size_t>(l)], l, x, cos, sin, static_shapes,
                       mask);
    const auto logits =
        project(rms_norm(x, m_w->final_norm, c.rms_eps), m_w->lm_head, m_w->lm_head_scale);
    m_logits.copy_(logits);
    if (!m_teacher_forced) {
        // Greedy sampling on the device: softmax over the vocabulary, argmax.
        const auto next = probabilities(logits).argmax(-1);
        m_seq.index_copy_(0, m_pos + 1, next);
    }
    m_pos.add_(1);
}

#if FOURFOLD_WITH_KERNELS
namespace {

// What a native step launched, for the records: per kernel, the launches and the distinct
// plans (the first step's; every later step, replayed or eager, launches the same).
class step_log {
  public:
    explicit step_log(bool on) : m_on(on) {}
    void add(const std::string& kernel, const std::string& plan, int launches = 1) {
        m_total += launches;
        if (!m_on)
            return;
        auto& k = m_kernels[kernel];
        // (a new entry is null, and json::value() throws on null)
        const int before = k.is_object() && k.contains("launches") ? k["launches"].get<int>() : 0;
        k["launches"] = before + launches;
        auto& plans = k["plans"];
        if (!plans.is_array())
            plans = json::array();
        if (std::find(plans.begin(), plans.end(), plan) == plans.end())
            plans.push_back(plan);
    }
    json finish(const std::string& others) const {
        return json{{"kernels", m_kernels},
                    {"launches_per_step", m_total},
                    {"launches_counted",
                     "fourfold's kernels and the GEMVs (bf16 or FP8) of the projections" + others}};
    }
    bool on() const { return m_on; }

  private:
    bool m_on;
    int m_total = 0;
    json m_kernels = json::object();
};

std::string gemv_plan_of(const at::Tensor& x, const at::Tensor& w, const at::Tensor& bias,
                         const call_context& ctx, const at::Tensor& norm = {},
                         bool swiglu = false) {
    kernels::gemv_args a;
    a.norm_weight = norm.defined() ? norm.data_ptr() : nullptr;
    a.swiglu_x = swiglu;
    a.x = x.data_ptr();
    a.w = w.data_ptr();
    a.bias = bias.defined() ? bias.data_ptr() : nullptr;
    a.tokens = x.size(0);
    a.n = w.size(0);
    a.k = w.size(1);
    a.ld_x = x.stride(0);
    a.ld_w = w.stride(0);
    a.ld_y = w.size(0);
    a.type = native::elem_of(x.scalar_type());
    return fmt::format("{}x{}: {}", a.n, a.k,
                       kernels::plan_gemv(a, native::limits(ctx)).describe());
}

std::string gemv_fp8_plan_of(const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale,
                             const at::Tensor& bias, const call_context& ctx,
                             const at::Tensor& norm = {}, bool swiglu = false) {
    kernels::gemv_fp8_args a;
    a.norm_weight = norm.defined() ? norm.data_ptr() : nullptr;
    a.swiglu_x = swiglu;
    a.x = x.data_ptr();
    a.w = w.data_ptr();
    a.scale = scale.data_ptr<float>();
    a.bias = bias.defined() ? bias.data_ptr() : nullptr;
    a.tokens = x.size(0);
    a.n = w.size(0);
    a.k = w.size(1);
    a.ld_x = x.stride(0);
    a.ld_w = w.stride(0);
    a.ld_y = w.size(0);
    a.inc_x = x.stride(1);
    a.inc_w = w.stride(1);
    a.scaling = kernels::fp8_scaling::per_row;
    a.inc_scale = scale.stride(0);
    return fmt::format("{}x{}: {}", a.n, a.k,
                       kernels::plan_gemv_fp8(a, native::limits(ctx)).describe());
}

} // namespace
#endif

void decoder_session::step_native() {
#if FOURFOLD_WITH_KERNELS
    using model_ops::op_path;
    const auto& c = m_w->config;
    const auto& ctx = *context();
    const auto& lim = native::limits(ctx);
    const auto stream = native::stream(ctx);
    const auto type = native::elem_of(m_w->dtype());
    const auto opts = m_k.options();
    step_log log(m_native_facts.empty());
    auto* pos = m_pos.data_ptr<std::int64_t>();

    // x (the residual stream) + pending (an MoE block's output, or undefined), normalised by
    // `weight` into a new tensor; x is updated in place when pending is added.
    auto norm = [&](at::Tensor& x, const at::Tensor& pending, const at::Tensor& weight,
                    bool gather) {
        auto h = at::empty({1, c.hidden}, opts);
        kernels::rmsnorm_args a;
        a.x = gather ? m_w->embed.data_ptr() : x.data_ptr();
        a.residual = pending.defined() ? pending.data_ptr() : nullptr;
        a.weight = weight.data_ptr();
        a.out = gather || pending.defined() ? x.data_ptr() : nullptr;
        a.normed = h.data_ptr();
        if (gather) {
            a.index = m_seq.data_ptr<std::int64_t>();
            a.at = pos;
            a.gather_rows = c.vocab;
            a.ld_x = m_w->embed.stride(0);
        } else {
            a.ld_x = c.hidden;
        }
        a.rows = 1;
        a.cols = c.hidden;
        a.ld_residual = a.ld_out = a.ld_normed = c.hidden;
        a.eps = c.rms_eps;
        a.type = type;
        const auto p = kernels::plan_rmsnorm(a, lim);
        if (log.on())
            log.add(gather              ? "rmsnorm (embedding gather fused)"
                    : pending.defined() ? "rmsnorm (residual add fused)"
                                        : "rmsnorm",
                    p.describe());
        else
            log.add("", "");
        native::check(kernels::launch_rmsnorm(p, a, stream), "rmsnorm");
        return h;
    };
    // an fp8_row weight (its scale defined) through model_ops::linear_fp8, the FP8 GEMV
    auto linear = [&](const at::Tensor& x, const at::Tensor& w, const at::Tensor& scale,
                      const at::Tensor& bias, const char* what) {
        const bool native = m_paths.linear == op_path::native;
        if (log.on() && scale.defined())
            log.add(fmt::format("gemv_fp8 {}", what),
                    native ? gemv_fp8_plan_of(x, w, scale, bias, ctx)
                           : "dequantised, then at::linear (model_ops::linear_fp8_dequantised)");
        else if (log.on())
            log.add(fmt::format("gemv {}", what), native ? gemv_plan_of(x, w, bias, ctx)
                                                         : std::string(to_string(m_paths.linear)));
        else
            log.add("", "");
        return decoder_linear(x, w, scale, bias, m_paths.linear, &ctx);
    };
    // RMSNorm(x (+ pending)) W^T: one launch (the norm inside the GEMV's blocks, bf16 or FP8)
    // where there is no residual to add or row to gather and the GEMV's plan takes it, else the
    // norm, then W.
    auto normed_linear = [&](at::Tensor& x, const at::Tensor& pending, const at::Tensor& weight,
                             bool gather, const at::Tensor& w, const at::Tensor& scale,
                             const char* what) {
        if (!gather && !pending.defined() && m_paths.linear == op_path::native &&
            m_paths.fuse_prologues) {
            const bool fp8 = scale.defined();
            auto y = fp8 ? model_ops::linear_fp8_rms_normed(x, weight, c.rms_eps, w, scale, ctx)
                         : model_ops::native_linear_rms_normed(x, weight, c.rms_eps, w, ctx);
            if (y.defined()) {
                if (log.on())
                    log.add(fmt::format("{} {} (RMSNorm fused)", fp8 ? "gemv_fp8" : "gemv", what),
                            fp8 ? gemv_fp8_plan_of(x, w, scale, Tensor(), ctx, weight)
                                : gemv_plan_of(x, w, Tensor(), ctx, weight));
                else
                    log.add("", "");
                return y;
            }
        }
        const auto h = norm(x, pending, weight, gather);
        return linear(h, w, scale, Tensor(), what);
    };

    auto x = at::empty({1, c.hidden}, opts);
    at::Tensor pending;
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto& lw = m_w->layers[static_cast<std::size_t>(l)];
        const auto qkv =
            normed_linear(x, pending, lw.input_norm, l == 0, lw.qkv, lw.qkv_scale, "qkv");
        pending = at::Tensor();

        auto q = at::empty({1, c.q_dim()}, opts);
        auto kc = m_k[l], vc = m_v[l];
        kernels::rope_kv_args ra;
        ra.qkv = qkv.data_ptr();
        ra.ld_qkv = qkv.stride(0);
        if (c.qk_norm) {
            ra.q_norm = lw.q_norm.data_ptr();
            ra.k_norm = lw.k_norm.data_ptr();
        }
        ra.eps = c.rms_eps;
        ra.cos = m_cos.data_ptr();
        ra.sin = m_sin.data_ptr();
        ra.pos = pos;
        ra.q_out = q.data_ptr();
        ra.k_cache = kc.data_ptr();
        ra.v_cache = vc.data_ptr();
        ra.tokens = 1;
        ra.heads = c.heads;
        ra.kv_heads = c.kv_heads;
        ra.head_dim = c.head_dim;
        ra.capacity = m_capacity;
        ra.type = type;
        auto attn = at::empty({1, c.q_dim()}, opts);
        kernels::decode_attention_args aa;
        aa.q = q.data_ptr();
        aa.k_cache = kc.data_ptr();
        aa.v_cache = vc.data_ptr();
        aa.pos = pos;
        aa.out = attn.data_ptr();
        aa.workspace = m_attention_workspace.data_ptr<float>();
        aa.heads = c.heads;
        aa.kv_heads = c.kv_heads;
        aa.head_dim = c.head_dim;
        aa.capacity = m_capacity;
        aa.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
        aa.type = type;
        // native_fused: rope_kv inside decode attention where its plan takes it (one launch
        // fewer a layer, the same bits), else rope_kv's own launch first
        auto ap = kernels::decode_attention_plan{};
        if (m_paths.fuse_prologues) {
            aa.rope = {ra.qkv, ra.ld_qkv, ra.q_norm, ra.k_norm, ra.eps, ra.cos, ra.sin};
            ap = kernels::plan_decode_attention(aa, lim);
            if (!ap.valid.empty())
                aa.rope = {};
        }
        if (!aa.rope.qkv) {
            const auto rp = kernels::plan_rope_kv(ra, lim);
            log.add("rope_kv", log.on() ? rp.describe() : "");
            native::check(kernels::launch_rope_kv(rp, ra, stream), "rope_kv");
            ap = kernels::plan_decode_attention(aa, lim);
        }
        log.add(aa.rope.qkv ? "decode_attention (RoPE and the KV append fused)"
                            : "decode_attention",
                log.on() ? ap.describe() : "", ap.combine ? 2 : 1);
        native::check(kernels::launch_decode_attention(ap, aa, stream), "decode_attention");

        // the residual add as the o projection's bias: x + o(attn), rounded once
        x = linear(attn, lw.o, lw.o_scale, x.view({c.hidden}), "o (+ residual as bias)");
        if (c.is_moe_layer(l)) {
            // The norm, the router's GEMV, the experts and the residual add in one launch where
            // the kernels take it (the next layer's norm then goes into its qkv GEMV)
            if (m_paths.moe == moe_path::native) {
                auto out = model_ops::moe_block_native(
                    x, lw.post_attention_norm, c.rms_eps, lw.router, lw.experts_gate_up,
                    lw.experts_down, c.experts_per_token, c.norm_topk, true, ctx);
                if (out.defined()) {
                    x = out;
                    log.add("moe block (RMSNorm, router, experts and the residual add in one "
                            "launch)",
                            log.on() ? "kernels/moe.cu, the fused prologue" : "");
                    continue;
                }
            }
            // otherwise added to the residual stream by the next norm (residual add fused)
            const auto h = norm(x, Tensor(), lw.post_attention_norm, false);
            pending = decoder_mlp(c, lw, l, h, m_paths, &ctx);
            // the MoE path is the decode variant's (native_decoder_paths())
            log.add("moe_ffn (model_ops, libtorch ops)",
                    log.on() ? std::string(to_string(m_paths.moe)) : "", 0);
            continue;
        }
        const auto gu = normed_linear(x, Tensor(), lw.post_attention_norm, false, lw.gate_up,
                                      lw.gate_up_scale, "gate_up");
        // SwiGLU inside the down projection's GEMV (bf16 or FP8) where its plan takes it
        if (m_paths.linear == op_path::native && m_paths.fuse_prologues) {
            const bool fp8 = lw.down_scale.defined();
            const auto residual = x.view({c.hidden});
            auto down =
                fp8 ? model_ops::linear_fp8_swiglu(gu, lw.down, lw.down_scale, residual, ctx)
                    : model_ops::native_linear_swiglu(gu, lw.down, residual, ctx);
            if (down.defined()) {
                if (log.on())
                    log.add(fmt::format("{} down (SwiGLU fused, + residual as bias)",
                                        fp8 ? "gemv_fp8" : "gemv"),
                            fp8 ? gemv_fp8_plan_of(gu, lw.down, lw.down_scale, residual, ctx,
                                                   Tensor(), true)
                                : gemv_plan_of(gu, lw.down, residual, ctx, Tensor(), true));
                else
                    log.add("", "");
                x = down;
                continue;
            }
        }
        const auto width = gu.size(1) / 2;
        auto act = at::empty({1, width}, opts);
        kernels::swiglu_args sa;
        sa.gate_up = gu.data_ptr();
        sa.out = act.data_ptr();
        sa.tokens = 1;
        sa.width = width;
        sa.ld_in = gu.stride(0);
        sa.ld_out = width;
        sa.type = type;
        const auto sp = kernels::plan_swiglu(sa, lim);
        log.add("swiglu", log.on() ? sp.describe() : "");
        native::check(kernels::launch_swiglu(sp, sa, stream), "swiglu");
        x = linear(act, lw.down, lw.down_scale, x.view({c.hidden}), "down (+ residual as bias)");
    }
    const auto logits = normed_linear(x, pending, m_w->final_norm, false, m_w->lm_head,
                                      m_w->lm_head_scale, "lm_head");
    m_logits = logits; // a captured step's logits stay where the graph writes them
    if (!m_teacher_forced) {
        kernels::argmax_args ga;
        ga.x = logits.data_ptr();
        ga.n = c.vocab;
        ga.tokens = m_seq.data_ptr<std::int64_t>();
        ga.at = pos;
        ga.advance = pos; // the position moves on in the same launch
        ga.workspace = m_argmax_workspace.data_ptr();
        ga.type = type;
        const auto gp = kernels::plan_argmax(ga, lim);
        log.add("argmax (token written, position advanced)", log.on() ? gp.describe() : "");
        native::check(kernels::launch_argmax(gp, ga, stream), "argmax");
    } else {
        m_pos.add_(1);
        log.add("position += 1 (teacher forced: libtorch add_)", "at::Tensor::add_");
    }
    if (log.on())
        m_native_facts = log.finish(
            c.has_moe() ? "; not counted: the libtorch ops of model_ops::moe_ffn in each MoE layer"
                        : "");
#else
    throw std::logic_error("a native decode step ran in a build without native kernels");
#endif
}

at::Tensor decoder_session::prefill(const at::Tensor& prompt) {
    const auto t = prompt.size(0);
    if (t < 1 || t > m_capacity)
        throw std::invalid_argument(
            fmt::format("prefill of {} tokens into a cache of {}", t, m_capacity));
    m_teacher_forced = false;
    m_seq.narrow(0, 0, t).copy_(prompt);
    auto logits = forward_prefill(prompt, false);
    m_logits.copy_(logits);
    m_seq.narrow(0, t, 1).copy_(probabilities(logits).argmax(-1));
    m_pos.fill_(t);
    m_host_pos = t;
    return logits;
}

at::Tensor decoder_session::prefill_teacher_forced(const at::Tensor& tokens,
                                                   std::int64_t prompt_length) {
    const auto n = tokens.size(0);
    if (prompt_length < 1 || prompt_length > n || n > m_capacity)
        throw std::invalid_argument(fmt::format(
            "teacher forcing {} of {} tokens into a cache of {}", prompt_length, n, m_capacity));
    m_teacher_forced = true;
    m_seq.narrow(0, 0, n).copy_(tokens);
    auto logits = forward_prefill(tokens.narrow(0, 0, prompt_length), true);
    m_pos.fill_(prompt_length);
    m_host_pos = prompt_length;
    return logits;
}

void decoder_session::step() {
    if (m_host_pos >= m_capacity)
        throw std::logic_error(fmt::format("decode step at position {} past the cache capacity {}",
                                           m_host_pos, m_capacity));
    m_step.run([this] { step_body(false); });
    ++m_host_pos;
}

void decoder_session::capture(backend::device& dev) {
    // The device runs the body once to warm up and once under capture; both move the device
    // position on, so it is put back afterwards (the replay rewrites what the warm-up wrote).
    if (m_host_pos >= m_capacity)
        throw std::logic_error("capture needs a free cache position");
    m_step.capture(dev, [this] { step_body(true); });
    m_pos.fill_(m_host_pos);
}

} // namespace fourfold::workloads::models
