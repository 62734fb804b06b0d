#include "fourfold/workloads/models/decoder.hpp"

#include "fourfold/backend/device.hpp"
#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/core/text.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <set>
#if FOURFOLD_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#if __has_include(<ATen/ops/rms_norm.h>)
#define FOURFOLD_HAS_RMS_NORM 1
#else
#define FOURFOLD_HAS_RMS_NORM 0
#endif

namespace fourfold::workloads::models {
namespace {

using at::Tensor;

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps) {
#if FOURFOLD_HAS_RMS_NORM
    return at::rms_norm(x, {weight.size(0)}, weight, eps);
#else
    // Hugging Face's LlamaRMSNorm: normalise in float32, round, then scale.
    const auto xf = x.to(at::kFloat);
    const auto r = at::rsqrt(xf.pow(2).mean({-1}, true).add_(eps));
    return weight * (xf * r).to(x.scalar_type());
#endif
}

// x [T, heads, head_dim]; cos, sin [T, 1, head_dim] in x's dtype. Hugging Face's rotate_half.
Tensor apply_rope(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    const auto half = x.size(-1) / 2;
    const auto rotated = at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1);
    return x * cos + rotated * sin;
}

// Inverse frequencies of the rotary embedding, in double (the device tables round them to
// float32 as Hugging Face does; the reference keeps them in double).
std::vector<double> rope_inv_freq(const model_config& c) {
    std::vector<double> f(static_cast<std::size_t>(c.head_dim / 2));
    for (std::size_t i = 0; i < f.size(); ++i)
        f[i] = 1.0 / std::pow(c.rope.theta,
                              2.0 * static_cast<double>(i) / static_cast<double>(c.head_dim));
    if (c.rope.type == "llama3") {
        // Llama 3.1: long wavelengths slowed by `factor`, short ones kept, a smooth blend between.
        const double pi = 3.14159265358979323846;
        const double orig = static_cast<double>(c.rope.original_max_positions);
        const double low_wavelen = orig / c.rope.low_freq_factor;
        const double high_wavelen = orig / c.rope.high_freq_factor;
        for (auto& v : f) {
            const double wavelen = 2 * pi / v;
            if (wavelen < high_wavelen)
                continue;
            if (wavelen > low_wavelen) {
                v /= c.rope.factor;
                continue;
            }
            const double smooth = (orig / wavelen - c.rope.low_freq_factor) /
                                  (c.rope.high_freq_factor - c.rope.low_freq_factor);
            v = (1 - smooth) * v / c.rope.factor + smooth * v;
        }
    }
    return f;
}

Tensor inv_freq_tensor(const model_config& c, c10::ScalarType type) {
    const auto f = rope_inv_freq(c);
    auto t =
        at::empty({static_cast<std::int64_t>(f.size())}, at::TensorOptions().dtype(at::kDouble));
    std::copy(f.begin(), f.end(), t.data_ptr<double>());
    return t.to(type);
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
    const auto p = at::softmax(scores, -1, at::kFloat).to(q.scalar_type());
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

at::Generator make_generator(c10::Device device, std::uint64_t seed) {
#if FOURFOLD_WITH_CUDA
    if (device.is_cuda()) {
        auto g = at::cuda::detail::createCUDAGenerator(device.index());
        g.set_current_seed(seed);
        return g;
    }
#endif
    (void)device;
    return at::detail::createCPUGenerator(seed);
}

// --- Hugging Face names ----------------------------------------------------------------------

std::string layer_prefix(std::int64_t l) {
    return fmt::format("model.layers.{}.", l);
}

struct expected_tensor {
    std::string name;
    std::vector<std::int64_t> shape;
};

bool fused_experts_in(const checkpoint& ck, std::int64_t layer) {
    return ck.contains(layer_prefix(layer) + "mlp.experts.gate_up_proj");
}

std::vector<expected_tensor> expected_tensors(const model_config& c, const checkpoint* ck) {
    std::vector<expected_tensor> out{{"model.embed_tokens.weight", {c.vocab, c.hidden}},
                                     {"model.norm.weight", {c.hidden}}};
    if (!c.tie_embeddings)
        out.push_back({"lm_head.weight", {c.vocab, c.hidden}});
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto p = layer_prefix(l);
        out.push_back({p + "input_layernorm.weight", {c.hidden}});
        out.push_back({p + "post_attention_layernorm.weight", {c.hidden}});
        out.push_back({p + "self_attn.q_proj.weight", {c.q_dim(), c.hidden}});
        out.push_back({p + "self_attn.k_proj.weight", {c.kv_dim(), c.hidden}});
        out.push_back({p + "self_attn.v_proj.weight", {c.kv_dim(), c.hidden}});
        out.push_back({p + "self_attn.o_proj.weight", {c.hidden, c.q_dim()}});
        if (c.qk_norm) {
            out.push_back({p + "self_attn.q_norm.weight", {c.head_dim}});
            out.push_back({p + "self_attn.k_norm.weight", {c.head_dim}});
        }
        if (!c.is_moe_layer(l)) {
            out.push_back({p + "mlp.gate_proj.weight", {c.intermediate, c.hidden}});
            out.push_back({p + "mlp.up_proj.weight", {c.intermediate, c.hidden}});
            out.push_back({p + "mlp.down_proj.weight", {c.hidden, c.intermediate}});
            continue;
        }
        out.push_back({p + "mlp.gate.weight", {c.experts, c.hidden}});
        if (ck && fused_experts_in(*ck, l)) {
            out.push_back(
                {p + "mlp.experts.gate_up_proj", {c.experts, 2 * c.moe_intermediate, c.hidden}});
            out.push_back({p + "mlp.experts.down_proj", {c.experts, c.hidden, c.moe_intermediate}});
            continue;
        }
        for (std::int64_t e = 0; e < c.experts; ++e) {
            const auto ep = fmt::format("{}mlp.experts.{}.", p, e);
            out.push_back({ep + "gate_proj.weight", {c.moe_intermediate, c.hidden}});
            out.push_back({ep + "up_proj.weight", {c.moe_intermediate, c.hidden}});
            out.push_back({ep + "down_proj.weight", {c.hidden, c.moe_intermediate}});
        }
    }
    return out;
}

std::string shape_text(const std::vector<std::int64_t>& s) {
    std::vector<std::string> parts;
    for (const auto d : s)
        parts.push_back(std::to_string(d));
    return fmt::format("[{}]", join(parts, ", "));
}

bool floating_dtype(const std::string& d) {
    return d == "F16" || d == "BF16" || d == "F32" || d == "F64" || d == "F8_E4M3" ||
           d == "F8_E5M2";
}

// One checkpoint tensor as `type` on the CPU; float8 weights multiplied by their
// weight_scale_inv (per tensor or per block, the block size read off the two shapes).
Tensor read_as(const checkpoint& ck, const std::string& name, c10::ScalarType type) {
    auto t = ck.read(name);
    const auto& dtype = ck.entry(name).dtype;
    if (dtype.rfind("F8_", 0) != 0)
        return t.to(type);
    auto w = t.to(at::kFloat);
    const auto scale_name = name + "_scale_inv";
    if (!ck.contains(scale_name))
        return w.to(type);
    const auto s = ck.read(scale_name).to(at::kFloat);
    if (s.numel() == 1)
        return (w * s.reshape({})).to(type);
    if (s.dim() != 2 || w.dim() != 2 || s.size(0) < 1 || s.size(1) < 1 || s.size(0) > w.size(0) ||
        s.size(1) > w.size(1))
        throw bad_input(
            fmt::format("{}: scale {} has shape {}, which does not tile weight shape {}",
                        ck.directory().string(), scale_name, shape_text(s.sizes().vec()),
                        shape_text(w.sizes().vec())));
    const auto rows = (w.size(0) + s.size(0) - 1) / s.size(0);
    const auto cols = (w.size(1) + s.size(1) - 1) / s.size(1);
    const auto full = s.repeat_interleave(rows, 0)
                          .narrow(0, 0, w.size(0))
                          .repeat_interleave(cols, 1)
                          .narrow(1, 0, w.size(1));
    return (w * full).to(type);
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
#if FOURFOLD_HAS_RMS_NORM
    return "at::rms_norm";
#else
    return "composite: float32 mean of squares, rsqrt, scale (libtorch has no at::rms_norm before "
           "2.4)";
#endif
}

c10::ScalarType decoder_weights::dtype() const {
    return embed.scalar_type();
}
c10::Device decoder_weights::device() const {
    return embed.device();
}

std::int64_t decoder_weights::bytes() const {
    std::int64_t n = 0;
    auto add = [&](const Tensor& t) {
        if (t.defined())
            n += t.numel() * static_cast<std::int64_t>(t.element_size());
    };
    add(embed);
    add(final_norm);
    if (!lm_head.is_same(embed))
        add(lm_head);
    for (const auto& l : layers)
        for (const auto* t :
             {&l.input_norm, &l.post_attention_norm, &l.qkv, &l.o, &l.q_norm, &l.k_norm, &l.gate_up,
              &l.down, &l.router, &l.experts_gate_up, &l.experts_down})
            add(*t);
    return n;
}

decoder_weights decoder_weights::first_layers(std::int64_t n) const {
    auto out = *this;
    n = std::min<std::int64_t>(n, static_cast<std::int64_t>(layers.size()));
    out.layers.resize(static_cast<std::size_t>(n));
    out.config = config.with_layers(n);
    return out;
}

decoder_weights decoder_weights::to_cpu() const {
    auto copy = [](const Tensor& t) { return t.defined() ? t.to(at::kCPU) : t; };
    decoder_weights out;
    out.config = config;
    out.source = source;
    out.embed = copy(embed);
    out.final_norm = copy(final_norm);
    out.lm_head = lm_head.is_same(embed) ? out.embed : copy(lm_head);
    for (const auto& l : layers) {
        layer_weights c;
        c.input_norm = copy(l.input_norm);
        c.post_attention_norm = copy(l.post_attention_norm);
        c.qkv = copy(l.qkv);
        c.o = copy(l.o);
        c.q_norm = copy(l.q_norm);
        c.k_norm = copy(l.k_norm);
        c.gate_up = copy(l.gate_up);
        c.down = copy(l.down);
        c.router = copy(l.router);
        c.experts_gate_up = copy(l.experts_gate_up);
        c.experts_down = copy(l.experts_down);
        out.layers.push_back(std::move(c));
    }
    return out;
}

decoder_weights random_weights(const model_config& c, c10::ScalarType type, c10::Device device,
                               std::uint64_t seed) {
    c.validate();
    // MPS has no private generator here: generate on the CPU and copy.
    const auto gen_device = device.is_cuda() ? device : c10::Device(c10::DeviceType::CPU);
    auto gen = make_generator(gen_device, seed);
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(gen_device);
    auto normal = [&](std::vector<std::int64_t> shape, double stdev) {
        auto t = at::randn(shape, gen, f32);
        t.mul_(stdev);
        return t.to(device, type);
    };
    auto ones = [&](std::int64_t n) {
        return at::ones({n}, at::TensorOptions().dtype(type).device(device));
    };
    auto fan_in = [](std::int64_t n) { return 1.0 / std::sqrt(static_cast<double>(n)); };

    decoder_weights w;
    w.config = c;
    w.embed = normal({c.vocab, c.hidden}, c.tie_embeddings ? fan_in(c.hidden) : 1.0);
    for (std::int64_t l = 0; l < c.layers; ++l) {
        layer_weights lw;
        lw.input_norm = ones(c.hidden);
        lw.post_attention_norm = ones(c.hidden);
        lw.qkv = normal({c.qkv_dim(), c.hidden}, fan_in(c.hidden));
        lw.o = normal({c.hidden, c.q_dim()}, fan_in(c.q_dim()));
        if (c.qk_norm) {
            lw.q_norm = ones(c.head_dim);
            lw.k_norm = ones(c.head_dim);
        }
        if (c.is_moe_layer(l)) {
            lw.router = normal({c.experts, c.hidden}, fan_in(c.hidden));
            lw.experts_gate_up =
                normal({c.experts, 2 * c.moe_intermediate, c.hidden}, fan_in(c.hidden));
            lw.experts_down =
                normal({c.experts, c.hidden, c.moe_intermediate}, fan_in(c.moe_intermediate));
        } else {
            lw.gate_up = normal({2 * c.intermediate, c.hidden}, fan_in(c.hidden));
            lw.down = normal({c.hidden, c.intermediate}, fan_in(c.intermediate));
        }
        w.layers.push_back(std::move(lw));
    }
    w.final_norm = ones(c.hidden);
    w.lm_head = c.tie_embeddings ? w.embed : normal({c.vocab, c.hidden}, fan_in(c.hidden));
    w.source =
        fmt::format("random: projections normal(0, 1/sqrt(fan_in)), RMSNorm weights 1, "
                    "embedding normal(0, {}); float32 from a {} generator seeded {}, rounded "
                    "to the job dtype",
                    c.tie_embeddings ? "1/sqrt(hidden)" : "1", gen_device.str(), seed);
    return w;
}

std::uint64_t random_weights_seed(std::uint64_t init_seed) {
    return splitmix64(init_seed ^ 0x77e1'6475ull);
}

void check_checkpoint(const model_config& c, const checkpoint& ck) {
    for (const auto& e : expected_tensors(c, &ck)) {
        const auto& entry = ck.entry(e.name);
        if (entry.shape != e.shape)
            throw bad_input(fmt::format("{}: tensor {} has shape {}; the config needs {}",
                                        ck.directory().string(), e.name, shape_text(entry.shape),
                                        shape_text(e.shape)));
        if (!floating_dtype(entry.dtype))
            throw bad_input(
                fmt::format("{}: tensor {} has dtype {}; weights must be F16, BF16, F32, "
                            "F64, F8_E4M3 or F8_E5M2",
                            ck.directory().string(), e.name, entry.dtype));
    }
}

decoder_weights load_weights(const model_config& c, const checkpoint& ck, c10::ScalarType type,
                             c10::Device device) {
    check_checkpoint(c, ck);
    auto get = [&](const std::string& name) { return read_as(ck, name, type).to(device); };
    decoder_weights w;
    w.config = c;
    w.embed = get("model.embed_tokens.weight");
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto p = layer_prefix(l);
        layer_weights lw;
        lw.input_norm = get(p + "input_layernorm.weight");
        lw.post_attention_norm = get(p + "post_attention_layernorm.weight");
        lw.qkv = at::cat({read_as(ck, p + "self_attn.q_proj.weight", type),
                          read_as(ck, p + "self_attn.k_proj.weight", type),
                          read_as(ck, p + "self_attn.v_proj.weight", type)})
                     .to(device);
        lw.o = get(p + "self_attn.o_proj.weight");
        if (c.qk_norm) {
            lw.q_norm = get(p + "self_attn.q_norm.weight");
            lw.k_norm = get(p + "self_attn.k_norm.weight");
        }
        if (!c.is_moe_layer(l)) {
            lw.gate_up = at::cat({read_as(ck, p + "mlp.gate_proj.weight", type),
                                  read_as(ck, p + "mlp.up_proj.weight", type)})
                             .to(device);
            lw.down = get(p + "mlp.down_proj.weight");
        } else {
            lw.router = get(p + "mlp.gate.weight");
            if (fused_experts_in(ck, l)) {
                lw.experts_gate_up = get(p + "mlp.experts.gate_up_proj");
                lw.experts_down = get(p + "mlp.experts.down_proj");
            } else {
                const auto opts = at::TensorOptions().dtype(type).device(device);
                const auto mi = c.moe_intermediate;
                lw.experts_gate_up = at::empty({c.experts, 2 * mi, c.hidden}, opts);
                lw.experts_down = at::empty({c.experts, c.hidden, mi}, opts);
                for (std::int64_t e = 0; e < c.experts; ++e) {
                    const auto ep = fmt::format("{}mlp.experts.{}.", p, e);
                    lw.experts_gate_up[e].narrow(0, 0, mi).copy_(
                        read_as(ck, ep + "gate_proj.weight", type));
                    lw.experts_gate_up[e].narrow(0, mi, mi).copy_(
                        read_as(ck, ep + "up_proj.weight", type));
                    lw.experts_down[e].copy_(read_as(ck, ep + "down_proj.weight", type));
                }
            }
        }
        w.layers.push_back(std::move(lw));
    }
    w.final_norm = get("model.norm.weight");
    w.lm_head = c.tie_embeddings ? w.embed : get("lm_head.weight");
    std::set<std::string> dtypes;
    for (const auto& name : ck.names())
        dtypes.insert(ck.entry(name).dtype);
    w.source =
        fmt::format("checkpoint {} ({} safetensors file{}{}, stored as {}), converted to the "
                    "job dtype",
                    ck.directory().string(), ck.file_count(), ck.file_count() == 1 ? "" : "s",
                    ck.indexed() ? " with index" : "",
                    join(std::vector<std::string>(dtypes.begin(), dtypes.end()), ", "));
    return w;
}

named_tensors hf_tensors(const decoder_weights& w) {
    const auto& c = w.config;
    named_tensors out{{"model.embed_tokens.weight", w.embed}};
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto& lw = w.layers[static_cast<std::size_t>(l)];
        const auto p = layer_prefix(l);
        out.emplace_back(p + "input_layernorm.weight", lw.input_norm);
        out.emplace_back(p + "post_attention_layernorm.weight", lw.post_attention_norm);
        out.emplace_back(p + "self_attn.q_proj.weight", lw.qkv.narrow(0, 0, c.q_dim()));
        out.emplace_back(p + "self_attn.k_proj.weight", lw.qkv.narrow(0, c.q_dim(), c.kv_dim()));
        out.emplace_back(p + "self_attn.v_proj.weight",
                         lw.qkv.narrow(0, c.q_dim() + c.kv_dim(), c.kv_dim()));
        out.emplace_back(p + "self_attn.o_proj.weight", lw.o);
        if (c.qk_norm) {
            out.emplace_back(p + "self_attn.q_norm.weight", lw.q_norm);
            out.emplace_back(p + "self_attn.k_norm.weight", lw.k_norm);
        }
        if (!c.is_moe_layer(l)) {
            out.emplace_back(p + "mlp.gate_proj.weight", lw.gate_up.narrow(0, 0, c.intermediate));
            out.emplace_back(p + "mlp.up_proj.weight",
                             lw.gate_up.narrow(0, c.intermediate, c.intermediate));
            out.emplace_back(p + "mlp.down_proj.weight", lw.down);
            continue;
        }
        out.emplace_back(p + "mlp.gate.weight", lw.router);
        const auto mi = c.moe_intermediate;
        for (std::int64_t e = 0; e < c.experts; ++e) {
            const auto ep = fmt::format("{}mlp.experts.{}.", p, e);
            out.emplace_back(ep + "gate_proj.weight", lw.experts_gate_up[e].narrow(0, 0, mi));
            out.emplace_back(ep + "up_proj.weight", lw.experts_gate_up[e].narrow(0, mi, mi));
            out.emplace_back(ep + "down_proj.weight", lw.experts_down[e]);
        }
    }
    out.emplace_back("model.norm.weight", w.final_norm);
    if (!c.tie_embeddings)
        out.emplace_back("lm_head.weight", w.lm_head);
    return out;
}

// --- the session ------------------------------------------------------------------------------

decoder_session::decoder_session(std::shared_ptr<const decoder_weights> weights,
                                 std::int64_t capacity, moe_path moe)
    : m_w(std::move(weights)), m_capacity(capacity), m_moe(moe) {
    const auto& c = m_w->config;
    if (capacity < 1)
        throw std::invalid_argument("decoder_session: capacity must be >= 1");
    const auto opts = at::TensorOptions().device(m_w->device());
    m_k = at::zeros({c.layers, c.kv_heads, capacity, c.head_dim}, opts.dtype(m_w->dtype()));
    m_v = at::zeros_like(m_k);
    const auto freqs = at::outer(at::arange(capacity, opts.dtype(at::kFloat)),
                                 inv_freq_tensor(c, at::kFloat).to(m_w->device()));
    // computed in float32 and rounded to the job dtype once, as Hugging Face rounds them per use
    const auto emb = at::cat({freqs, freqs}, -1);
    m_cos = emb.cos().to(m_w->dtype());
    m_sin = emb.sin().to(m_w->dtype());
    m_seq = at::zeros({capacity + 1}, opts.dtype(at::kLong));
    m_pos = at::zeros({1}, opts.dtype(at::kLong));
    m_positions = at::arange(capacity, opts.dtype(at::kLong));
    m_logits = at::zeros({1, c.vocab}, opts.dtype(m_w->dtype()));
}

decoder_session::~decoder_session() = default;

std::int64_t decoder_session::kv_cache_bytes() const {
    return 2 * m_k.numel() * static_cast<std::int64_t>(m_k.element_size());
}

bool decoder_session::captured() const {
    return m_graph != nullptr;
}

at::Tensor decoder_session::mlp(const layer_weights& lw, std::int64_t layer,
                                const at::Tensor& h) const {
    const auto& c = m_w->config;
    if (!c.is_moe_layer(layer)) {
        const auto gu = at::linear(h, lw.gate_up);
        return at::linear(at::silu(gu.narrow(1, 0, c.intermediate)) *
                              gu.narrow(1, c.intermediate, c.intermediate),
                          lw.down);
    }
    // Qwen3-MoE routing: softmax over the experts in float32, top-k, renormalised when
    // norm_topk, then in the activations' dtype.
    const auto t = h.size(0), k = c.experts_per_token, mi = c.moe_intermediate;
    const auto probs = at::softmax(at::linear(h, lw.router), -1, at::kFloat);
    auto [top_w, top_i] = probs.topk(k, -1);
    if (c.norm_topk)
        top_w = top_w / top_w.sum(-1, true);
    top_w = top_w.to(h.scalar_type());
    // Rows (token, choice) sorted by expert: each expert's rows are one contiguous group.
    const auto flat_e = top_i.reshape({-1});
    auto [sorted_e, order] = flat_e.sort();
    const auto rows = h.index_select(0, order.div(k, "floor"));
    Tensor y;
    if (m_moe == moe_path::grouped_mm) {
#if FOURFOLD_HAS_GROUPED_MM
        const auto counts =
            at::zeros({c.experts}, flat_e.options()).scatter_add_(0, flat_e, at::ones_like(flat_e));
        const auto offs = counts.cumsum(0, at::kInt); // group END offsets, on the device
        const auto gu = at::_grouped_mm(rows, lw.experts_gate_up.transpose(1, 2), offs);
        const auto act = at::silu(gu.narrow(1, 0, mi)) * gu.narrow(1, mi, mi);
        y = at::_grouped_mm(act, lw.experts_down.transpose(1, 2), offs);
#else
        throw unsupported_here(fmt::format("at::_grouped_mm is not available in libtorch {}.{}",
                                             TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
#endif
    } else {
        // The host-loop path (what the reference report's E2 replaced): the expert counts come
        // to the host, then one pair of projections per expert that has rows.
        const auto counts = at::zeros({c.experts}, flat_e.options())
                                .scatter_add_(0, flat_e, at::ones_like(flat_e))
                                .to(at::kCPU);
        const auto* n = counts.data_ptr<std::int64_t>();
        y = at::empty({rows.size(0), c.hidden}, h.options());
        std::int64_t start = 0;
        for (std::int64_t e = 0; e < c.experts; ++e) {
            if (n[e] == 0)
                continue;
            const auto gu = at::linear(rows.narrow(0, start, n[e]), lw.experts_gate_up[e]);
            const auto act = at::silu(gu.narrow(1, 0, mi)) * gu.narrow(1, mi, mi);
            y.narrow(0, start, n[e]).copy_(at::linear(act, lw.experts_down[e]));
            start += n[e];
        }
    }
    y = y * top_w.reshape({-1}).index_select(0, order).unsqueeze(1);
    // Back to (token, choice) order, then the k choices of each token summed (in float32
    // inside the reduction, rounded once; no atomics, so the result is deterministic).
    return at::empty_like(y).index_copy_(0, order, y).view({t, k, c.hidden}).sum(1);
}

at::Tensor decoder_session::forward_prefill(const at::Tensor& tokens, bool all_logits) {
    const auto& c = m_w->config;
    const auto t = tokens.size(0);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    const auto groups = c.heads / c.kv_heads;
    auto x = m_w->embed.index_select(0, tokens);
    const auto cos = m_cos.narrow(0, 0, t).unsqueeze(1);
    const auto sin = m_sin.narrow(0, 0, t).unsqueeze(1);
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto& lw = m_w->layers[static_cast<std::size_t>(l)];
        const auto qkv = at::linear(rms_norm(x, lw.input_norm, c.rms_eps), lw.qkv);
        auto q = qkv.narrow(1, 0, c.q_dim()).view({t, c.heads, c.head_dim});
        auto k = qkv.narrow(1, c.q_dim(), c.kv_dim()).view({t, c.kv_heads, c.head_dim});
        const auto v =
            qkv.narrow(1, c.q_dim() + c.kv_dim(), c.kv_dim()).view({t, c.kv_heads, c.head_dim});
        if (c.qk_norm) {
            q = rms_norm(q, lw.q_norm, c.rms_eps);
            k = rms_norm(k, lw.k_norm, c.rms_eps);
        }
        q = apply_rope(q, cos, sin);
        k = apply_rope(k, cos, sin);
        const auto kt = k.transpose(0, 1), vt = v.transpose(0, 1); // [kv_heads, T, hd]
        m_k[l].narrow(1, 0, t).copy_(kt);
        m_v[l].narrow(1, 0, t).copy_(vt);
        x = x + at::linear(attention_prefill(q, kt, vt, groups, scale), lw.o);
        x = x + mlp(lw, l, rms_norm(x, lw.post_attention_norm, c.rms_eps));
    }
    if (!all_logits)
        x = x.narrow(0, t - 1, 1);
    return at::linear(rms_norm(x, m_w->final_norm, c.rms_eps), m_w->lm_head);
}

at::Tensor decoder_session::layer_step(const layer_weights& lw, std::int64_t layer, at::Tensor x,
                                       const at::Tensor& cos, const at::Tensor& sin,
                                       bool static_shapes, const at::Tensor& mask) {
    const auto& c = m_w->config;
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    const auto qkv = at::linear(rms_norm(x, lw.input_norm, c.rms_eps), lw.qkv);
    auto q = qkv.narrow(1, 0, c.q_dim()).view({1, c.heads, c.head_dim});
    auto k = qkv.narrow(1, c.q_dim(), c.kv_dim()).view({1, c.kv_heads, c.head_dim});
    const auto v =
        qkv.narrow(1, c.q_dim() + c.kv_dim(), c.kv_dim()).view({1, c.kv_heads, c.head_dim});
    if (c.qk_norm) {
        q = rms_norm(q, lw.q_norm, c.rms_eps);
        k = rms_norm(k, lw.k_norm, c.rms_eps);
    }
    q = apply_rope(q, cos, sin);
    k = apply_rope(k, cos, sin);
    auto kc = m_k[layer], vc = m_v[layer];
    // The new key and value go in at the device-side position: no host value in the step.
    kc.index_copy_(1, m_pos, k.transpose(0, 1));
    vc.index_copy_(1, m_pos, v.transpose(0, 1));
    if (!static_shapes) {
        // Eager: attend over the filled prefix only, its length known on the host.
        kc = kc.narrow(1, 0, m_host_pos + 1);
        vc = vc.narrow(1, 0, m_host_pos + 1);
    }
    x = x + at::linear(attention_decode(q, kc, vc, c.heads / c.kv_heads, mask, scale), lw.o);
    return x + mlp(lw, layer, rms_norm(x, lw.post_attention_norm, c.rms_eps));
}

void decoder_session::step_body(bool static_shapes) {
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
    const auto logits = at::linear(rms_norm(x, m_w->final_norm, c.rms_eps), m_w->lm_head);
    m_logits.copy_(logits);
    if (!m_teacher_forced) {
        // Greedy sampling on the device: softmax over the vocabulary, argmax.
        const auto next = at::softmax(logits, -1, at::kFloat).argmax(-1);
        m_seq.index_copy_(0, m_pos + 1, next);
    }
    m_pos.add_(1);
}

at::Tensor decoder_session::prefill(const at::Tensor& prompt) {
    const auto t = prompt.size(0);
    if (t < 1 || t > m_capacity)
        throw std::invalid_argument(
            fmt::format("prefill of {} tokens into a cache of {}", t, m_capacity));
    m_teacher_forced = false;
    m_seq.narrow(0, 0, t).copy_(prompt);
    const auto logits = forward_prefill(prompt, false);
    m_logits.copy_(logits);
    m_seq.narrow(0, t, 1).copy_(at::softmax(logits, -1, at::kFloat).argmax(-1));
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
    const auto logits = forward_prefill(tokens.narrow(0, 0, prompt_length), true);
    m_pos.fill_(prompt_length);
    m_host_pos = prompt_length;
    return logits;
}

void decoder_session::step() {
    if (m_host_pos >= m_capacity)
        throw std::logic_error(fmt::format("decode step at position {} past the cache capacity {}",
                                           m_host_pos, m_capacity));
    if (m_graph)
        m_graph->replay();
    else
        step_body(false);
    ++m_host_pos;
}

void decoder_session::capture(backend::device& dev) {
    // The device runs the body once to warm up and once under capture; both move the device
    // position on, so it is put back afterwards (the replay rewrites what the warm-up wrote).
    if (m_host_pos >= m_capacity)
        throw std::logic_error("capture needs a free cache position");
    m_graph = dev.capture([this] { step_body(true); });
    m_pos.fill_(m_host_pos);
}

// --- the float64 reference ----------------------------------------------------------------------

namespace {

// x (float64) times W^T, W upcast one block of output rows at a time.
Tensor linear_f64(const Tensor& x, const Tensor& w) {
    const auto n = w.size(0), k = w.size(1);
    const auto rows = std::max<std::int64_t>(1, k_reference_block_bytes / (k * 8));
    if (rows >= n)
        return at::matmul(x, w.to(at::kDouble).t());
    auto out = at::empty({x.size(0), n}, x.options());
    for (std::int64_t s = 0; s < n; s += rows) {
        const auto len = std::min(rows, n - s);
        out.narrow(1, s, len).copy_(at::matmul(x, w.narrow(0, s, len).to(at::kDouble).t()));
    }
    return out;
}

Tensor rms_f64(const Tensor& x, const Tensor& w, double eps) {
    return x * at::rsqrt(x.pow(2).mean({-1}, true) + eps) * w.to(at::kDouble);
}

Tensor rope_f64(const Tensor& x, const Tensor& cos, const Tensor& sin) {
    const auto half = x.size(-1) / 2;
    return x * cos + at::cat({x.narrow(-1, half, half).neg(), x.narrow(-1, 0, half)}, -1) * sin;
}

Tensor swiglu_f64(const Tensor& h, const Tensor& gate_up, const Tensor& down, std::int64_t width) {
    const auto gate = linear_f64(h, gate_up.narrow(0, 0, width));
    const auto up = linear_f64(h, gate_up.narrow(0, width, width));
    return linear_f64(at::silu(gate) * up, down);
}

} // namespace

at::Tensor reference_hidden_f64(const decoder_weights& w, const at::Tensor& tokens) {
    const auto& c = w.config;
    const auto t = tokens.size(0);
    const auto groups = c.heads / c.kv_heads;
    const auto f64 = at::TensorOptions().dtype(at::kDouble);
    auto x = w.embed.index_select(0, tokens).to(at::kDouble);
    const auto freqs = at::outer(at::arange(t, f64), inv_freq_tensor(c, at::kDouble));
    const auto emb = at::cat({freqs, freqs}, -1);
    const auto cos = emb.cos().unsqueeze(1), sin = emb.sin().unsqueeze(1);
    const auto future = at::ones({t, t}, f64.dtype(at::kBool)).triu(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto& lw = w.layers[static_cast<std::size_t>(l)];
        const auto qkv = linear_f64(rms_f64(x, lw.input_norm, c.rms_eps), lw.qkv);
        auto q = qkv.narrow(1, 0, c.q_dim()).reshape({t, c.heads, c.head_dim});
        auto k = qkv.narrow(1, c.q_dim(), c.kv_dim()).reshape({t, c.kv_heads, c.head_dim});
        const auto v =
            qkv.narrow(1, c.q_dim() + c.kv_dim(), c.kv_dim()).reshape({t, c.kv_heads, c.head_dim});
        if (c.qk_norm) {
            q = rms_f64(q, lw.q_norm, c.rms_eps);
            k = rms_f64(k, lw.k_norm, c.rms_eps);
        }
        q = rope_f64(q, cos, sin);
        k = rope_f64(k, cos, sin);
        auto attn = at::empty({t, c.heads, c.head_dim}, f64);
        for (std::int64_t h = 0; h < c.heads; ++h) {
            const auto kv = h / groups;
            auto scores = at::matmul(q.select(1, h), k.select(1, kv).t()) * scale;
            scores.masked_fill_(future, -std::numeric_limits<double>::infinity());
            attn.select(1, h).copy_(at::matmul(at::softmax(scores, -1), v.select(1, kv)));
        }
        x = x + linear_f64(attn.reshape({t, c.q_dim()}), lw.o);
        const auto h = rms_f64(x, lw.post_attention_norm, c.rms_eps);
        if (!c.is_moe_layer(l)) {
            x = x + swiglu_f64(h, lw.gate_up, lw.down, c.intermediate);
            continue;
        }
        const auto probs = at::softmax(linear_f64(h, lw.router), -1);
        auto [top_w, top_i] = probs.topk(c.experts_per_token, -1);
        if (c.norm_topk)
            top_w = top_w / top_w.sum(-1, true);
        // Each routed expert applied to the tokens routed to it, weighted, summed per token.
        std::map<std::int64_t, std::vector<std::pair<std::int64_t, double>>> by_expert;
        const auto ti = top_i.accessor<std::int64_t, 2>();
        const auto tw = top_w.accessor<double, 2>();
        for (std::int64_t r = 0; r < t; ++r)
            for (std::int64_t j = 0; j < c.experts_per_token; ++j)
                by_expert[ti[r][j]].emplace_back(r, tw[r][j]);
        auto y = at::zeros({t, c.hidden}, f64);
        for (const auto& [e, routed] : by_expert) {
            const auto n = static_cast<std::int64_t>(routed.size());
            auto index = at::empty({n}, f64.dtype(at::kLong));
            auto weight = at::empty({n, 1}, f64);
            for (std::int64_t i = 0; i < n; ++i) {
                index.data_ptr<std::int64_t>()[i] = routed[static_cast<std::size_t>(i)].first;
                weight.data_ptr<double>()[i] = routed[static_cast<std::size_t>(i)].second;
            }
            const auto out = swiglu_f64(h.index_select(0, index), lw.experts_gate_up[e],
                                        lw.experts_down[e], c.moe_intermediate);
            y.index_add_(0, index, out * weight);
        }
        x = x + y;
    }
    return rms_f64(x, w.final_norm, c.rms_eps);
}

at::Tensor reference_logits_f64(const decoder_weights& w, const at::Tensor& hidden,
                                std::int64_t start, std::int64_t length) {
    return linear_f64(hidden, w.lm_head.narrow(0, start, length));
}

} // namespace fourfold::workloads::models
