#include "fourfold/workloads/models/vae_reference.hpp"

#include "fourfold/workloads/models/vae_session.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <fmt/format.h>

namespace fourfold::workloads::models {
namespace {

using at::Tensor;

struct ref {
    const vae_weights& w; // float64, CPU

    const Tensor& t(const std::string& name) const { return w.at(name); }

    // A causal conv of kernel depth pad_t + 1 over the whole clip: zeros in front, none behind.
    // A single frame meets only the kernel's last time slice (the others see the zero frames),
    // so it is a 2-D conv with that slice: the same sum, without multiplying the zeros.
    Tensor causal(const std::string& p, const Tensor& x, std::int64_t pad_t,
                  std::int64_t pad_s) const {
        const auto& weight = t(p + ".weight");
        const auto& bias = t(p + ".bias");
        if (x.size(2) == 1) {
            const auto x2 = at::constant_pad_nd(x.select(2, 0), {pad_s, pad_s, pad_s, pad_s}, 0);
            const auto w2 = weight.select(2, weight.size(2) - 1);
            return at::conv2d(x2, w2, bias).unsqueeze(2);
        }
        const auto xp = at::constant_pad_nd(x, {pad_s, pad_s, pad_s, pad_s, pad_t, 0}, 0);
        return at::conv3d(xp, weight, bias);
    }

    Tensor norm(const Tensor& x, const std::string& gamma) const {
        const auto n = at::sqrt((x * x).sum(1, true)).clamp_min(1e-12);
        return x / n * std::sqrt(static_cast<double>(x.size(1))) * t(gamma);
    }

    Tensor residual(const std::string& p, const Tensor& x) const {
        const auto skip =
            w.has(p + ".conv_shortcut.weight") ? causal(p + ".conv_shortcut", x, 0, 0) : x;
        auto h = causal(p + ".conv1", at::silu(norm(x, p + ".norm1.gamma")), 2, 1);
        h = causal(p + ".conv2", at::silu(norm(h, p + ".norm2.gamma")), 2, 1);
        return skip + h;
    }

    // Per frame: softmax(q k^T / sqrt(c)) v over the frame's pixels.
    Tensor attention(const std::string& p, const Tensor& x) const {
        const auto b = x.size(0), c = x.size(1), f = x.size(2), h = x.size(3), wd = x.size(4);
        std::vector<Tensor> frames;
        for (std::int64_t i = 0; i < f; ++i) {
            const auto frame = norm(x.select(2, i), p + ".norm.gamma"); // [b, c, h, w]
            const auto qkv = at::conv2d(frame, t(p + ".to_qkv.weight"), t(p + ".to_qkv.bias"))
                                 .reshape({b, 3 * c, h * wd});
            const auto q = qkv.narrow(1, 0, c), k = qkv.narrow(1, c, c),
                       v = qkv.narrow(1, 2 * c, c);
            const auto a = at::softmax(at::bmm(q.transpose(1, 2), k) / std::sqrt(double(c)), -1);
            const auto o = at::bmm(v, a.transpose(1, 2)).reshape({b, c, h, wd}); // [b, c, hw]
            frames.push_back(at::conv2d(o, t(p + ".proj.weight"), t(p + ".proj.bias")));
        }
        return x + at::stack(frames, 2);
    }

    Tensor per_frame_2d(const Tensor& x, const std::function<Tensor(const Tensor&)>& fn) const {
        std::vector<Tensor> frames;
        for (std::int64_t i = 0; i < x.size(2); ++i)
            frames.push_back(fn(x.select(2, i)));
        return at::stack(frames, 2);
    }

    Tensor upsample(const std::string& p, Tensor x) const {
        if (w.has(p + ".time_conv.weight") && x.size(2) > 1) {
            const auto rest = causal(p + ".time_conv", x.narrow(2, 1, x.size(2) - 1), 2, 0);
            const auto c = x.size(1);
            // channels [2c]: the first c the earlier frame of each pair, the next c the later
            std::vector<Tensor> out{x.narrow(2, 0, 1)};
            for (std::int64_t i = 0; i < rest.size(2); ++i) {
                out.push_back(rest.select(2, i).narrow(1, 0, c).unsqueeze(2));
                out.push_back(rest.select(2, i).narrow(1, c, c).unsqueeze(2));
            }
            x = at::cat(out, 2);
        }
        return per_frame_2d(x, [&](const Tensor& f) {
            const auto big = at::upsample_nearest2d(f, {2 * f.size(2), 2 * f.size(3)});
            return at::conv2d(big, t(p + ".resample.1.weight"), t(p + ".resample.1.bias"), {1, 1},
                              {1, 1});
        });
    }

    Tensor downsample(const std::string& p, const Tensor& x) const {
        return per_frame_2d(x, [&](const Tensor& f) {
            return at::conv2d(at::constant_pad_nd(f, {0, 1, 0, 1}, 0), t(p + ".resample.1.weight"),
                              t(p + ".resample.1.bias"), {2, 2});
        });
    }

    Tensor middle(const std::string& p, const Tensor& x) const {
        return residual(p + ".resnets.1",
                        attention(p + ".attentions.0", residual(p + ".resnets.0", x)));
    }

    Tensor decode_tile(const Tensor& z) const {
        const auto& c = w.config;
        auto x = causal("post_quant_conv", z, 0, 0);
        x = causal("decoder.conv_in", x, 2, 1);
        x = middle("decoder.mid_block", x);
        const auto stages = static_cast<std::int64_t>(c.dim_mult.size());
        for (std::int64_t i = 0; i < stages; ++i) {
            for (std::int64_t j = 0; j <= c.num_res_blocks; ++j)
                x = residual(fmt::format("decoder.up_blocks.{}.resnets.{}", i, j), x);
            if (i != stages - 1)
                x = upsample(fmt::format("decoder.up_blocks.{}.upsamplers.0", i), x);
        }
        return causal("decoder.conv_out", at::silu(norm(x, "decoder.norm_out.gamma")), 2, 1);
    }

    Tensor encode(const Tensor& image) const {
        const auto& c = w.config;
        auto x = causal("encoder.conv_in", image, 2, 1);
        const auto stages = static_cast<std::int64_t>(c.dim_mult.size());
        std::int64_t k = 0;
        for (std::int64_t i = 0; i < stages; ++i) {
            for (std::int64_t r = 0; r < c.num_res_blocks; ++r)
                x = residual(fmt::format("encoder.down_blocks.{}", k++), x);
            if (i != stages - 1)
                x = downsample(fmt::format("encoder.down_blocks.{}", k++), x);
        }
        x = middle("encoder.mid_block", x);
        x = causal("encoder.conv_out", at::silu(norm(x, "encoder.norm_out.gamma")), 2, 1);
        return causal("quant_conv", x, 0, 0).narrow(1, 0, c.z_dim);
    }
};

// Weights of one edge: 1, ramping from 0 over the first `e` pixels after an earlier tile and
// down to 0 over the last `e` before a later one.
Tensor edge_weights(std::int64_t n, std::int64_t e, bool after_one, bool before_one) {
    auto out = at::ones({n}, at::TensorOptions().dtype(at::kDouble));
    for (std::int64_t i = 0; i < e && i < n; ++i) {
        const double up = static_cast<double>(i) / static_cast<double>(e);
        if (after_one)
            out[i] = std::min(out[i].item<double>(), up);
        if (before_one)
            out[n - e + i] = std::min(out[n - e + i].item<double>(), 1.0 - up);
    }
    return out;
}

} // namespace

at::Tensor vae_reference_decode(const vae_weights& weights, const at::Tensor& z, std::int64_t tile,
                                std::int64_t stride) {
    const auto w = weights.to(c10::Device(c10::DeviceType::CPU), at::kDouble);
    const ref r{w};
    const auto zd = z.to(at::kCPU, at::kDouble);
    const auto f = w.config.spatial_factor();
    const auto lh = zd.size(3), lw = zd.size(4);
    const auto ys = vae_tile_starts(lh, tile, stride), xs = vae_tile_starts(lw, tile, stride);
    const auto th = std::min(tile, lh), tw = std::min(tile, lw);
    const auto e = (tile - stride) * f;
    auto sum = at::zeros({zd.size(0), 3, w.config.output_frames(zd.size(2)), lh * f, lw * f},
                         zd.options());
    auto wsum = at::zeros({lh * f, lw * f}, zd.options());
    for (std::size_t i = 0; i < ys.size(); ++i)
        for (std::size_t j = 0; j < xs.size(); ++j) {
            const auto out = r.decode_tile(zd.narrow(3, ys[i], th).narrow(4, xs[j], tw));
            auto wt = edge_weights(th * f, e, i > 0, i + 1 < ys.size()).unsqueeze(1) *
                      edge_weights(tw * f, e, j > 0, j + 1 < xs.size()).unsqueeze(0);
            if (ys.size() == 1 && xs.size() == 1)
                wt = at::ones_like(wt);
            sum.narrow(3, ys[i] * f, th * f).narrow(4, xs[j] * f, tw * f) += out * wt;
            wsum.narrow(0, ys[i] * f, th * f).narrow(1, xs[j] * f, tw * f) += wt;
        }
    return (sum / wsum).clamp(-1, 1);
}

at::Tensor vae_reference_roundtrip(const vae_weights& weights, const at::Tensor& x) {
    const auto w = weights.to(c10::Device(c10::DeviceType::CPU), at::kDouble);
    const ref r{w};
    return r.decode_tile(r.encode(x.to(at::kCPU, at::kDouble))).clamp(-1, 1);
}

} // namespace fourfold::workloads::models
