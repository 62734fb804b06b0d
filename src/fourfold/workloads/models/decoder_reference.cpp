#include "fourfold/workloads/models/decoder_reference.hpp"

#include "fourfold/workloads/models/rope.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <limits>
#include <map>

namespace fourfold::workloads::models {
namespace {

using at::Tensor;

// Rows [start, start + len) of W in float64: upcast, or for an fp8_row weight (scale defined)
// dequantised, scale[n] * wq[n, :] (e4m3 values and float32 scales are exact in float64).
Tensor rows_f64(const Tensor& w, const Tensor& scale, std::int64_t start, std::int64_t len) {
    const auto block = w.narrow(0, start, len);
    if (!scale.defined())
        return block.to(at::kDouble);
    return block.to(at::kFloat).to(at::kDouble) *
           scale.reshape({-1}).narrow(0, start, len).to(at::kDouble).unsqueeze(1);
}

// x (float64) times W^T, W upcast (or dequantised) one block of output rows at a time.
Tensor linear_f64(const Tensor& x, const Tensor& w, const Tensor& scale = Tensor()) {
    const auto n = w.size(0), k = w.size(1);
    const auto rows = std::max<std::int64_t>(1, k_reference_block_bytes / (k * 8));
    if (rows >= n)
        return at::matmul(x, rows_f64(w, scale, 0, n).t());
    auto out = at::empty({x.size(0), n}, x.options());
    for (std::int64_t s = 0; s < n; s += rows) {
        const auto len = std::min(rows, n - s);
        out.narrow(1, s, len).copy_(at::matmul(x, rows_f64(w, scale, s, len).t()));
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

Tensor swiglu_f64(const Tensor& h, const Tensor& gate_up, const Tensor& down, std::int64_t width,
                  const Tensor& gate_up_scale = Tensor(), const Tensor& down_scale = Tensor()) {
    const auto part = [&](std::int64_t start) {
        return gate_up_scale.defined() ? gate_up_scale.reshape({-1}).narrow(0, start, width)
                                       : Tensor();
    };
    const auto gate = linear_f64(h, gate_up.narrow(0, 0, width), part(0));
    const auto up = linear_f64(h, gate_up.narrow(0, width, width), part(width));
    return linear_f64(at::silu(gate) * up, down, down_scale);
}

} // namespace

at::Tensor reference_hidden_f64(const decoder_weights& w, const at::Tensor& tokens) {
    const auto& c = w.config;
    const auto t = tokens.size(0);
    const auto groups = c.heads / c.kv_heads;
    const auto f64 = at::TensorOptions().dtype(at::kDouble);
    auto x = w.embed.index_select(0, tokens).to(at::kDouble);
    const auto freqs = at::outer(at::arange(t, f64), rope_inv_freq_tensor(c, at::kDouble));
    const auto emb = at::cat({freqs, freqs}, -1);
    const auto cos = emb.cos().unsqueeze(1), sin = emb.sin().unsqueeze(1);
    const auto future = at::ones({t, t}, f64.dtype(at::kBool)).triu(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    for (std::int64_t l = 0; l < c.layers; ++l) {
        const auto& lw = w.layers[static_cast<std::size_t>(l)];
        const auto qkv = linear_f64(rms_f64(x, lw.input_norm, c.rms_eps), lw.qkv, lw.qkv_scale);
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
        x = x + linear_f64(attn.reshape({t, c.q_dim()}), lw.o, lw.o_scale);
        const auto h = rms_f64(x, lw.post_attention_norm, c.rms_eps);
        if (!c.is_moe_layer(l)) {
            x = x +
                swiglu_f64(h, lw.gate_up, lw.down, c.intermediate, lw.gate_up_scale, lw.down_scale);
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
    return linear_f64(hidden, w.lm_head.narrow(0, start, length),
                      w.lm_head_scale.defined() ? w.lm_head_scale.narrow(0, start, length)
                                                : Tensor());
}

} // namespace fourfold::workloads::models
