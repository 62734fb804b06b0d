#pragma once
// The VAE as a job runs it: the decoder causal, one latent frame at a time, with the last frames
// of every causal conv's input cached (diffusers' AutoencoderKLWan feat_cache, which is where a
// tiled decode's thousands of pad calls come from), spatially tiled with overlap blending; the
// encoder of one image. Every causal conv is a constant pad through model_ops::pad (the pad
// workload's very code) and then a conv3d with no padding of its own; every pad call is counted.
#include "fourfold/workloads/model_ops/op_path.hpp"
#include "fourfold/workloads/models/vae_weights.hpp"

#include <ATen/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fourfold::workloads {
class call_context;
}

namespace fourfold::workloads::models {

// A pad as model_ops::pad takes it: pads in constant_pad_nd order, the constant.
using pad_function =
    std::function<at::Tensor(const at::Tensor& x, c10::IntArrayRef pads, double value)>;

struct vae_paths {
    model_ops::op_path pad = model_ops::op_path::stock;
    // Test-only: replaces model_ops::pad (a deliberately wrong pad, to show that the correctness
    // ledger catches one); empty in every registered variant.
    pad_function pad_override;
};

// The latent offsets of tiles of `tile` every `stride` over `size`: 0, stride, 2 stride, ...,
// the last one ending at the edge (size - tile); one tile when size <= tile.
std::vector<std::int64_t> vae_tile_starts(std::int64_t size, std::int64_t tile,
                                          std::int64_t stride);

// cuDNN's algorithm search and TF32 for one job, restored when the guard goes. Off a CUDA build
// they are libtorch's flags only (nothing reads them on the CPU).
class vae_backend_settings {
  public:
    vae_backend_settings(bool cudnn_benchmark, bool tf32);
    ~vae_backend_settings();
    vae_backend_settings(const vae_backend_settings&) = delete;
    vae_backend_settings& operator=(const vae_backend_settings&) = delete;

  private:
    bool m_benchmark, m_tf32_cudnn, m_tf32_cublas;
};

class vae_session {
  public:
    // `ctx` is the call context a native pad launches on (may be null for the library paths).
    vae_session(std::shared_ptr<const vae_weights> weights, vae_paths paths,
                const call_context* ctx);

    // z [B, z, T, h, w] -> [B, 3, 1 + 4 (T - 1), 8 h, 8 w] in [-1, 1]: tiles of `tile` x `tile`
    // latents every `stride`, each decoded causally (decode_tile), blended linearly over the
    // overlap (tile - stride latents) in float32, clamped.
    at::Tensor decode(const at::Tensor& z, std::int64_t tile, std::int64_t stride);
    // The same, a tile at a time (what the throughput pass times): begin_decode lays out the
    // tiles and zeroes the output, decode_step(i) decodes tile i and blends it in, finish_decode
    // normalises, clamps and returns the output.
    std::int64_t begin_decode(const at::Tensor& z, std::int64_t tile, std::int64_t stride);
    void decode_step(std::int64_t i);
    at::Tensor finish_decode();
    // One tile, causal: post_quant_conv, then the decoder one latent frame at a time with the
    // causal convs' caches; unclamped.
    at::Tensor decode_tile(const at::Tensor& z);
    // x [B, 3, 1, H, W] -> the latent mean [B, z, 1, H / 8, W / 8].
    at::Tensor encode_image(const at::Tensor& x);

    std::int64_t pad_calls() const { return m_pad_calls; }
    void reset_pad_calls() { m_pad_calls = 0; }

  private:
    const at::Tensor& w(const std::string& name) const { return m_w->at(name); }
    at::Tensor pad(const at::Tensor& x, c10::IntArrayRef pads, double value);
    at::Tensor conv(const std::string& p, at::Tensor x, const at::Tensor& cache, std::int64_t pad_t,
                    std::int64_t pad_s);
    at::Tensor cached_conv(const std::string& p, const at::Tensor& x, std::int64_t pad_t,
                           std::int64_t pad_s);
    at::Tensor rms(const at::Tensor& x, const std::string& gamma) const;
    at::Tensor resblock(const std::string& p, const at::Tensor& x);
    at::Tensor attention(const std::string& p, const at::Tensor& x) const;
    at::Tensor upsample(const std::string& p, const at::Tensor& x);
    at::Tensor downsample(const std::string& p, const at::Tensor& x);
    at::Tensor mid(const std::string& p, const at::Tensor& x);
    at::Tensor decoder_chunk(const at::Tensor& x);
    void clear_cache();

    // A cache slot's state, as diffusers' feat_cache holds it: nothing yet, "Rep" (a time
    // upsampler that passed its first chunk through), or the last frames.
    enum class slot { empty, rep, frames };
    std::shared_ptr<const vae_weights> m_w;
    vae_paths m_paths;
    const call_context* m_ctx;
    std::vector<at::Tensor> m_cache;
    std::vector<slot> m_state;
    std::size_t m_idx = 0;
    std::int64_t m_pad_calls = 0;
    struct tiling {
        at::Tensor z, sum, weight;
        std::vector<std::int64_t> ys, xs;
        std::int64_t tile = 0, stride = 0;
    } m_tiling;
};

} // namespace fourfold::workloads::models
