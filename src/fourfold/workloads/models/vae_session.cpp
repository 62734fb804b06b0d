#include "fourfold/workloads/models/vae_session.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/workloads/model_ops/pad.hpp"

#include <ATen/ATen.h>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace fourfold::workloads::models {
namespace {

constexpr std::int64_t k_cache_frames = 2; // diffusers' CACHE_T

// Linear blend weights of one tile edge over `n` pixels: ramping up over the first `e` where a
// tile lies before it (`rise`), down over the last `e` where one lies after it (`fall`).
at::Tensor ramp(std::int64_t n, std::int64_t e, bool rise, bool fall) {
    auto r = at::ones({n}, at::TensorOptions().dtype(at::kFloat));
    auto* p = r.data_ptr<float>();
    for (std::int64_t i = 0; i < n && e > 0; ++i) {
        if (rise && i < e)
            p[i] = std::min(p[i], static_cast<float>(i) / static_cast<float>(e));
        if (fall && i >= n - e)
            p[i] = std::min(p[i], 1.0f - static_cast<float>(i - (n - e)) / static_cast<float>(e));
    }
    return r;
}

} // namespace

std::vector<std::int64_t> vae_tile_starts(std::int64_t size, std::int64_t tile,
                                          std::int64_t stride) {
    if (size <= tile)
        return {0};
    const auto n = (size - tile + stride - 1) / stride + 1;
    std::vector<std::int64_t> out;
    for (std::int64_t i = 0; i + 1 < n; ++i)
        out.push_back(i * stride);
    out.push_back(size - tile);
    return out;
}

vae_backend_settings::vae_backend_settings(bool cudnn_benchmark, bool tf32) {
    auto& g = at::globalContext();
    m_benchmark = g.benchmarkCuDNN();
    m_tf32_cudnn = g.allowTF32CuDNN();
    m_tf32_cublas = g.allowTF32CuBLAS();
    g.setBenchmarkCuDNN(cudnn_benchmark);
    g.setAllowTF32CuDNN(tf32);
    g.setAllowTF32CuBLAS(tf32);
}

vae_backend_settings::~vae_backend_settings() {
    auto& g = at::globalContext();
    g.setBenchmarkCuDNN(m_benchmark);
    g.setAllowTF32CuDNN(m_tf32_cudnn);
    g.setAllowTF32CuBLAS(m_tf32_cublas);
}

vae_session::vae_session(std::shared_ptr<const vae_weights> weights, vae_paths paths,
                         const call_context* ctx)
    : m_w(std::move(weights)), m_paths(std::move(paths)), m_ctx(ctx) {}

void vae_session::clear_cache() {
    m_cache.clear();
    m_state.clear();
    m_idx = 0;
}

at::Tensor vae_session::pad(const at::Tensor& x, c10::IntArrayRef pads, double value) {
    ++m_pad_calls;
    if (m_paths.pad_override)
        return m_paths.pad_override(x, pads, value);
    return model_ops::pad(x, pads, value, m_paths.pad, m_ctx);
}

// diffusers' WanCausalConv3d: pads (s, s, s, s, t, 0), the cached frames in front taking the
// place of as many zero frames, then the conv with no padding of its own.
at::Tensor vae_session::conv(const std::string& p, at::Tensor x, const at::Tensor& cache,
                             std::int64_t pad_t, std::int64_t pad_s) {
    std::int64_t pads[6] = {pad_s, pad_s, pad_s, pad_s, pad_t, 0};
    if (cache.defined() && pad_t > 0) {
        x = at::cat({cache, x}, 2);
        pads[4] -= cache.size(2);
    }
    x = pad(x, pads, 0);
    return at::conv3d(x, w(p + ".weight"), w(p + ".bias"));
}

at::Tensor vae_session::cached_conv(const std::string& p, const at::Tensor& x, std::int64_t pad_t,
                                    std::int64_t pad_s) {
    const auto idx = m_idx++;
    if (idx >= m_cache.size()) {
        m_cache.resize(idx + 1);
        m_state.resize(idx + 1, slot::empty);
    }
    const auto t = x.size(2);
    auto keep =
        x.narrow(2, std::max<std::int64_t>(0, t - k_cache_frames), std::min(t, k_cache_frames))
            .clone();
    const auto& cache = m_cache[idx];
    if (keep.size(2) < k_cache_frames && cache.defined())
        keep = at::cat({cache.narrow(2, cache.size(2) - 1, 1), keep}, 2);
    auto y = conv(p, x, cache, pad_t, pad_s);
    m_cache[idx] = keep;
    m_state[idx] = slot::frames;
    return y;
}

// diffusers' WanRMS_norm: F.normalize over the channels (eps 1e-12) x sqrt(channels) x gamma,
// in the activations' dtype.
at::Tensor vae_session::rms(const at::Tensor& x, const std::string& gamma) const {
    const auto scale = std::sqrt(static_cast<double>(x.size(1)));
    const auto n = x.norm(2, {1}, true).clamp_min(1e-12);
    return x / n * scale * w(gamma);
}

at::Tensor vae_session::resblock(const std::string& p, const at::Tensor& x) {
    const auto h =
        m_w->has(p + ".conv_shortcut.weight") ? conv(p + ".conv_shortcut", x, {}, 0, 0) : x;
    auto y = at::silu(rms(x, p + ".norm1.gamma"));
    y = cached_conv(p + ".conv1", y, 2, 1);
    y = at::silu(rms(y, p + ".norm2.gamma"));
    y = cached_conv(p + ".conv2", y, 2, 1);
    return y + h;
}

// diffusers' WanAttentionBlock: single-head attention over each frame's pixels, written out
// (scores, softmax, values) on every libtorch.
at::Tensor vae_session::attention(const std::string& p, const at::Tensor& x) const {
    const auto b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), wd = x.size(4);
    auto y = x.permute({0, 2, 1, 3, 4}).reshape({b * t, c, h, wd});
    y = rms(y, p + ".norm.gamma");
    y = at::conv2d(y, w(p + ".to_qkv.weight"), w(p + ".to_qkv.bias"));
    y = y.reshape({b * t, 3 * c, h * wd}).permute({0, 2, 1}); // [bt, hw, 3c]
    const auto qkv = y.chunk(3, -1);
    const auto scores =
        at::matmul(qkv[0], qkv[1].transpose(-1, -2)) * (1.0 / std::sqrt(static_cast<double>(c)));
    y = at::matmul(at::softmax(scores, -1), qkv[2]); // [bt, hw, c]
    y = y.permute({0, 2, 1}).reshape({b * t, c, h, wd});
    y = at::conv2d(y, w(p + ".proj.weight"), w(p + ".proj.bias"));
    return y.view({b, t, c, h, wd}).permute({0, 2, 1, 3, 4}) + x;
}

// diffusers' WanResample, upsample2d / upsample3d: the time conv (from the second chunk on: the
// first passes through, its slot marked "Rep") doubling the frames, then per frame 2x nearest
// and a 3x3 conv halving the channels (the conv's own padding, not a pad call).
at::Tensor vae_session::upsample(const std::string& p, const at::Tensor& in) {
    auto x = in;
    const auto b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), wd = x.size(4);
    if (m_w->has(p + ".time_conv.weight")) {
        const auto idx = m_idx++;
        if (idx >= m_cache.size()) {
            m_cache.resize(idx + 1);
            m_state.resize(idx + 1, slot::empty);
        }
        if (m_state[idx] == slot::empty) {
            m_state[idx] = slot::rep;
        } else {
            auto keep = x.narrow(2, std::max<std::int64_t>(0, t - k_cache_frames),
                                 std::min(t, k_cache_frames))
                            .clone();
            const bool rep = m_state[idx] == slot::rep;
            if (keep.size(2) < k_cache_frames)
                keep = at::cat({rep ? at::zeros_like(keep)
                                    : m_cache[idx].narrow(2, m_cache[idx].size(2) - 1, 1),
                                keep},
                               2);
            x = conv(p + ".time_conv", x, rep ? at::Tensor() : m_cache[idx], 2, 0);
            m_cache[idx] = keep;
            m_state[idx] = slot::frames;
            x = x.reshape({b, 2, c, t, h, wd});
            x = at::stack({x.select(1, 0), x.select(1, 1)}, 3).reshape({b, c, t * 2, h, wd});
        }
    }
    const auto frames = x.size(2);
    auto y = x.permute({0, 2, 1, 3, 4}).reshape({b * frames, c, h, wd});
    y = at::upsample_nearest2d(y, {2 * h, 2 * wd});
    y = at::conv2d(y, w(p + ".resample.1.weight"), w(p + ".resample.1.bias"), {1, 1}, {1, 1});
    return y.view({b, frames, y.size(1), 2 * h, 2 * wd}).permute({0, 2, 1, 3, 4});
}

// diffusers' WanResample, downsample2d / downsample3d on a first chunk: the one-sided zero pad
// (0, 1, 0, 1) (a pad call), the stride-2 3x3 conv; a time downsampler only keeps the frame.
at::Tensor vae_session::downsample(const std::string& p, const at::Tensor& x) {
    const auto b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), wd = x.size(4);
    auto y = x.permute({0, 2, 1, 3, 4}).reshape({b * t, c, h, wd});
    const std::int64_t pads[4] = {0, 1, 0, 1};
    y = pad(y, pads, 0);
    y = at::conv2d(y, w(p + ".resample.1.weight"), w(p + ".resample.1.bias"), {2, 2});
    y = y.view({b, t, c, y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4});
    if (m_w->has(p + ".time_conv.weight"))
        ++m_idx; // the first chunk is only kept (diffusers' feat_cache), no time conv
    return y;
}

at::Tensor vae_session::mid(const std::string& p, const at::Tensor& x) {
    auto y = resblock(p + ".resnets.0", x);
    y = attention(p + ".attentions.0", y);
    return resblock(p + ".resnets.1", y);
}

at::Tensor vae_session::decoder_chunk(const at::Tensor& in) {
    m_idx = 0;
    const auto& c = m_w->config;
    auto x = cached_conv("decoder.conv_in", in, 2, 1);
    x = mid("decoder.mid_block", x);
    const auto stages = static_cast<std::int64_t>(c.dim_mult.size());
    for (std::int64_t i = 0; i < stages; ++i) {
        for (std::int64_t j = 0; j <= c.num_res_blocks; ++j)
            x = resblock(fmt::format("decoder.up_blocks.{}.resnets.{}", i, j), x);
        if (i != stages - 1)
            x = upsample(fmt::format("decoder.up_blocks.{}.upsamplers.0", i), x);
    }
    x = at::silu(rms(x, "decoder.norm_out.gamma"));
    return cached_conv("decoder.conv_out", x, 2, 1);
}

at::Tensor vae_session::decode_tile(const at::Tensor& z) {
    clear_cache();
    const auto x = conv("post_quant_conv", z, {}, 0, 0);
    std::vector<at::Tensor> frames;
    for (std::int64_t t = 0; t < x.size(2); ++t)
        frames.push_back(decoder_chunk(x.narrow(2, t, 1)));
    clear_cache();
    return frames.size() == 1 ? frames[0] : at::cat(frames, 2);
}

std::int64_t vae_session::begin_decode(const at::Tensor& z, std::int64_t tile,
                                       std::int64_t stride) {
    if (z.dim() != 5 || z.size(1) != m_w->config.z_dim)
        throw std::invalid_argument(
            fmt::format("VAE decode: latents must be [B, {}, T, h, w]", m_w->config.z_dim));
    if (stride < 1 || stride > tile)
        throw std::invalid_argument("VAE decode: the tile stride must be in 1..tile");
    const auto f = m_w->config.spatial_factor();
    const auto lh = z.size(3), lw = z.size(4);
    auto& t = m_tiling;
    t.z = z;
    t.tile = tile;
    t.stride = stride;
    t.ys = vae_tile_starts(lh, tile, stride);
    t.xs = vae_tile_starts(lw, tile, stride);
    const auto fopts = z.options().dtype(at::kFloat);
    t.sum = at::zeros({z.size(0), 3, m_w->config.output_frames(z.size(2)), lh * f, lw * f}, fopts);
    t.weight = at::zeros({lh * f, lw * f}, fopts);
    return static_cast<std::int64_t>(t.ys.size() * t.xs.size());
}

void vae_session::decode_step(std::int64_t i) {
    auto& t = m_tiling;
    const auto f = m_w->config.spatial_factor();
    const auto r = static_cast<std::size_t>(i) / t.xs.size();
    const auto q = static_cast<std::size_t>(i) % t.xs.size();
    const auto th = std::min(t.tile, t.z.size(3)), tw = std::min(t.tile, t.z.size(4));
    const auto e = (t.tile - t.stride) * f;
    const auto dec = decode_tile(t.z.narrow(3, t.ys[r], th).narrow(4, t.xs[q], tw));
    const auto wy = ramp(th * f, e, r > 0, r + 1 < t.ys.size()).to(t.z.device());
    const auto wx = ramp(tw * f, e, q > 0, q + 1 < t.xs.size()).to(t.z.device());
    const auto w2 = wy.unsqueeze(1) * wx.unsqueeze(0);
    t.sum.narrow(3, t.ys[r] * f, th * f)
        .narrow(4, t.xs[q] * f, tw * f)
        .add_(dec.to(at::kFloat) * w2);
    t.weight.narrow(0, t.ys[r] * f, th * f).narrow(1, t.xs[q] * f, tw * f).add_(w2);
}

at::Tensor vae_session::finish_decode() {
    auto& t = m_tiling;
    auto out = (t.sum / t.weight).clamp(-1, 1).to(t.z.scalar_type());
    t = tiling{};
    return out;
}

at::Tensor vae_session::decode(const at::Tensor& z, std::int64_t tile, std::int64_t stride) {
    const auto n = begin_decode(z, tile, stride);
    for (std::int64_t i = 0; i < n; ++i)
        decode_step(i);
    return finish_decode();
}

at::Tensor vae_session::encode_image(const at::Tensor& in) {
    const auto& c = m_w->config;
    if (in.dim() != 5 || in.size(1) != 3 || in.size(2) != 1)
        throw std::invalid_argument("VAE encode: an image is [B, 3, 1, H, W]");
    if (m_w->parts != vae_parts::both)
        throw std::logic_error("VAE encode: these weights hold the decoder only");
    clear_cache();
    auto x = cached_conv("encoder.conv_in", in, 2, 1);
    const auto stages = static_cast<std::int64_t>(c.dim_mult.size());
    std::int64_t idx = 0;
    for (std::int64_t i = 0; i < stages; ++i) {
        for (std::int64_t r = 0; r < c.num_res_blocks; ++r)
            x = resblock(fmt::format("encoder.down_blocks.{}", idx++), x);
        if (i != stages - 1)
            x = downsample(fmt::format("encoder.down_blocks.{}", idx++), x);
    }
    x = mid("encoder.mid_block", x);
    x = at::silu(rms(x, "encoder.norm_out.gamma"));
    x = cached_conv("encoder.conv_out", x, 2, 1);
    x = conv("quant_conv", x, {}, 0, 0);
    clear_cache();
    return x.narrow(1, 0, c.z_dim);
}

} // namespace fourfold::workloads::models
