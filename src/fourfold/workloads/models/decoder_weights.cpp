#include "fourfold/workloads/models/decoder_weights.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/rng.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/workloads/model_ops/linear_fp8.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <cmath>
#include <fmt/format.h>
#include <set>
#if FOURFOLD_WITH_CUDA
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

namespace fourfold::workloads::models {
namespace {

using at::Tensor;

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
    parts.reserve(s.size());
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

// Where fp8_row puts a projection as it is made: quantised on its device into `w` and `scale`
// (the model-dtype tensor freed once the caller drops it), its original copied to the CPU into
// `original` when asked; in the model format `w` is the tensor itself.
class projection_store {
  public:
    explicit projection_store(weight_format f) : m_format(f) {}
    void put(Tensor t, Tensor& w, Tensor& scale, Tensor* original = nullptr) const {
        if (m_format == weight_format::model) {
            w = std::move(t);
            return;
        }
        if (original)
            *original = t.to(at::kCPU);
        auto [wq, s] = model_ops::quantise_fp8_row(t);
        w = std::move(wq);
        scale = std::move(s);
    }
    bool fp8() const { return m_format == weight_format::fp8_row; }

  private:
    weight_format m_format;
};

std::string fp8_source_note(const model_config& c) {
    return fmt::format("; qkv, o, the dense MLPs' gate_up and down{} stored as float8_e4m3fn "
                       "with a float32 scale per output row (amax / 448), quantised on the "
                       "device from the job-dtype weights, one tensor at a time; embedding, "
                       "norms{} in the job dtype",
                       c.tie_embeddings ? "" : " and the LM head",
                       c.has_moe() ? ", MoE router and experts" : "");
}

} // namespace

std::string_view to_string(weight_format f) {
    return f == weight_format::fp8_row ? "fp8_row" : "model";
}

fp8_footprint fp8_row_footprint(const model_config& c) {
    fp8_footprint f;
    auto add = [&](std::int64_t rows, std::int64_t cols) {
        f.weights += rows * cols;
        f.scales += rows;
    };
    for (std::int64_t l = 0; l < c.layers; ++l) {
        add(c.qkv_dim(), c.hidden);
        add(c.hidden, c.q_dim());
        if (!c.is_moe_layer(l)) {
            add(2 * c.intermediate, c.hidden);
            add(c.hidden, c.intermediate);
        }
    }
    if (!c.tie_embeddings)
        add(c.vocab, c.hidden);
    return f;
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
    add(lm_head_scale);
    for (const auto& l : layers)
        for (const auto* t :
             {&l.input_norm, &l.post_attention_norm, &l.qkv, &l.o, &l.q_norm, &l.k_norm, &l.gate_up,
              &l.down, &l.router, &l.experts_gate_up, &l.experts_down, &l.qkv_scale, &l.o_scale,
              &l.gate_up_scale, &l.down_scale})
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
    out.format = format;
    out.originals = originals; // on the CPU already
    out.embed = copy(embed);
    out.final_norm = copy(final_norm);
    out.lm_head = lm_head.is_same(embed) ? out.embed : copy(lm_head);
    out.lm_head_scale = copy(lm_head_scale);
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
        c.qkv_scale = copy(l.qkv_scale);
        c.o_scale = copy(l.o_scale);
        c.gate_up_scale = copy(l.gate_up_scale);
        c.down_scale = copy(l.down_scale);
        out.layers.push_back(std::move(c));
    }
    return out;
}

decoder_weights decoder_weights::with_originals() const {
    if (format != weight_format::fp8_row || !originals)
        throw std::logic_error("with_originals: these weights have no fp8 originals");
    const auto n = std::min(layers.size(), originals->layers.size());
    auto out = first_layers(static_cast<std::int64_t>(n));
    out.format = weight_format::model;
    out.originals.reset();
    for (std::size_t l = 0; l < n; ++l) {
        auto& lw = out.layers[l];
        const auto& o = originals->layers[l];
        lw.qkv = o.qkv;
        lw.o = o.o;
        if (o.gate_up.defined()) {
            lw.gate_up = o.gate_up;
            lw.down = o.down;
        }
        lw.qkv_scale = lw.o_scale = lw.gate_up_scale = lw.down_scale = Tensor();
    }
    if (originals->lm_head.defined())
        out.lm_head = originals->lm_head;
    out.lm_head_scale = Tensor();
    return out;
}

decoder_weights random_weights(const model_config& c, c10::ScalarType type, c10::Device device,
                               std::uint64_t seed, weight_format format,
                               std::int64_t keep_originals) {
    c.validate();
    const projection_store store(format);
    if (store.fp8()) // before any generation: the skip costs nothing
        (void)model_ops::quantise_fp8_row(at::zeros({1, 1}));
    // MPS has no private generator here: generate on the CPU and copy.
    const auto gen_device = device.is_cuda() ? device : c10::Device(c10::DeviceType::CPU);
    auto gen = make_generator(gen_device, seed);
    const auto f32 = at::TensorOptions().dtype(at::kFloat).device(gen_device);
    auto normal = [&](const std::vector<std::int64_t>& shape, double stdev) {
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
    w.format = format;
    auto originals = std::make_shared<fp8_originals>();
    w.embed = normal({c.vocab, c.hidden}, c.tie_embeddings ? fan_in(c.hidden) : 1.0);
    for (std::int64_t l = 0; l < c.layers; ++l) {
        layer_weights lw;
        layer_weights* orig = nullptr;
        if (store.fp8() && l < keep_originals)
            orig = &originals->layers.emplace_back();
        lw.input_norm = ones(c.hidden);
        lw.post_attention_norm = ones(c.hidden);
        store.put(normal({c.qkv_dim(), c.hidden}, fan_in(c.hidden)), lw.qkv, lw.qkv_scale,
                  orig ? &orig->qkv : nullptr);
        store.put(normal({c.hidden, c.q_dim()}, fan_in(c.q_dim())), lw.o, lw.o_scale,
                  orig ? &orig->o : nullptr);
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
            store.put(normal({2 * c.intermediate, c.hidden}, fan_in(c.hidden)), lw.gate_up,
                      lw.gate_up_scale, orig ? &orig->gate_up : nullptr);
            store.put(normal({c.hidden, c.intermediate}, fan_in(c.intermediate)), lw.down,
                      lw.down_scale, orig ? &orig->down : nullptr);
        }
        w.layers.push_back(std::move(lw));
    }
    w.final_norm = ones(c.hidden);
    if (c.tie_embeddings)
        w.lm_head = w.embed;
    else
        store.put(normal({c.vocab, c.hidden}, fan_in(c.hidden)), w.lm_head, w.lm_head_scale,
                  store.fp8() ? &originals->lm_head : nullptr);
    if (store.fp8())
        w.originals = std::move(originals);
    w.source =
        fmt::format("random: projections normal(0, 1/sqrt(fan_in)), RMSNorm weights 1, "
                    "embedding normal(0, {}); float32 from a {} generator seeded {}, rounded "
                    "to the job dtype{}",
                    c.tie_embeddings ? "1/sqrt(hidden)" : "1", gen_device.str(), seed,
                    store.fp8() ? fp8_source_note(c) : "");
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
                             c10::Device device, weight_format format,
                             std::int64_t keep_originals) {
    check_checkpoint(c, ck);
    const projection_store store(format);
    if (store.fp8()) // before any tensor is read: the skip costs nothing
        (void)model_ops::quantise_fp8_row(at::zeros({1, 1}));
    auto get = [&](const std::string& name) { return read_as(ck, name, type).to(device); };
    decoder_weights w;
    w.config = c;
    w.format = format;
    auto originals = std::make_shared<fp8_originals>();
    w.embed = get("model.embed_tokens.weight");
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto p = layer_prefix(l);
        layer_weights lw;
        layer_weights* orig = nullptr;
        if (store.fp8() && l < keep_originals)
            orig = &originals->layers.emplace_back();
        lw.input_norm = get(p + "input_layernorm.weight");
        lw.post_attention_norm = get(p + "post_attention_layernorm.weight");
        store.put(at::cat({read_as(ck, p + "self_attn.q_proj.weight", type),
                           read_as(ck, p + "self_attn.k_proj.weight", type),
                           read_as(ck, p + "self_attn.v_proj.weight", type)})
                      .to(device),
                  lw.qkv, lw.qkv_scale, orig ? &orig->qkv : nullptr);
        store.put(get(p + "self_attn.o_proj.weight"), lw.o, lw.o_scale, orig ? &orig->o : nullptr);
        if (c.qk_norm) {
            lw.q_norm = get(p + "self_attn.q_norm.weight");
            lw.k_norm = get(p + "self_attn.k_norm.weight");
        }
        if (!c.is_moe_layer(l)) {
            store.put(at::cat({read_as(ck, p + "mlp.gate_proj.weight", type),
                               read_as(ck, p + "mlp.up_proj.weight", type)})
                          .to(device),
                      lw.gate_up, lw.gate_up_scale, orig ? &orig->gate_up : nullptr);
            store.put(get(p + "mlp.down_proj.weight"), lw.down, lw.down_scale,
                      orig ? &orig->down : nullptr);
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
    if (c.tie_embeddings)
        w.lm_head = w.embed;
    else
        store.put(get("lm_head.weight"), w.lm_head, w.lm_head_scale,
                  store.fp8() ? &originals->lm_head : nullptr);
    if (store.fp8())
        w.originals = std::move(originals);
    std::set<std::string> dtypes;
    for (const auto& name : ck.names())
        dtypes.insert(ck.entry(name).dtype);
    w.source =
        fmt::format("checkpoint {} ({} safetensors file{}{}, stored as {}), converted to the "
                    "job dtype{}",
                    ck.directory().string(), ck.file_count(), ck.file_count() == 1 ? "" : "s",
                    ck.indexed() ? " with index" : "",
                    join(std::vector<std::string>(dtypes.begin(), dtypes.end()), ", "),
                    store.fp8() ? fp8_source_note(c) : "");
    return w;
}

named_tensors hf_tensors(const decoder_weights& w) {
    if (w.format != weight_format::model)
        throw std::invalid_argument("hf_tensors: fp8_row weights are not written out");
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

} // namespace fourfold::workloads::models
