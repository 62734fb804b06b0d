#pragma once
// A Wan-2.1-style causal video VAE (diffusers' AutoencoderKLWan): its shapes (vae_config), its
// weights under diffusers' own tensor names, random from a seed or loaded from a checkpoint
// directory, and the CPU copy the float64 reference upcasts from.
//
// The decoder (z -> video): post_quant_conv (1x1x1), conv_in (z -> 4*base), a middle block
// (residual, single-head attention per frame, residual), four up blocks of num_res_blocks + 1
// residual blocks each, the first three ending in an upsampler (2x nearest in space and a 3x3
// conv halving the channels; the first two also a causal time conv doubling the frames), an
// RMS norm, SiLU and conv_out (-> 3). The encoder mirrors it (downsamplers: a one-sided zero pad
// (0, 1, 0, 1) then a stride-2 conv) and ends in quant_conv; its first z channels are the mean.
#include "fourfold/core/json.hpp"
#include "fourfold/workloads/models/safetensors.hpp"

#include <ATen/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fourfold::workloads::models {

struct vae_config {
    std::string name = "wan2.1";
    std::int64_t base_dim = 96;
    std::int64_t z_dim = 16;
    std::int64_t num_res_blocks = 2;
    std::vector<std::int64_t> dim_mult{1, 2, 4, 4};
    std::vector<bool> temporal_downsample{false, true, true};

    // Channels entering each stage: decoder [4b, 4b, 4b, 2b, b], encoder [b, b, 2b, 4b, 4b].
    std::vector<std::int64_t> decoder_dims() const;
    std::vector<std::int64_t> encoder_dims() const;
    std::int64_t spatial_factor() const;  // 8 for four stages
    std::int64_t temporal_factor() const; // 4 for two temporal stages
    // 1 + 4 (T - 1): the first latent frame decodes to one frame, every later one to four.
    std::int64_t output_frames(std::int64_t latent_frames) const;
    // The constant-pad calls of one causal decode of one tile of `latent_frames` frames (one per
    // causal conv call: post_quant_conv once, then per frame every causal conv of the decoder,
    // shortcuts included, and the time convs from the second frame on).
    std::int64_t decode_pad_calls(std::int64_t latent_frames) const;
    // The constant-pad calls of encoding one image (one frame): every causal conv and the
    // downsamplers' one-sided pads, then quant_conv.
    std::int64_t encode_pad_calls() const;
    std::int64_t decoder_params() const;
    std::int64_t encoder_params() const;
    void validate() const; // throws bad_input naming the field
    json to_json() const;
};

// "wan2.1" (base 96: Wan 2.1's VAE) and "tiny" (base 16: the same structure, 1/6 of the widths,
// for the CPU).
std::vector<std::string> vae_preset_names();
std::optional<vae_config> find_vae_preset(const std::string& name);
// A preset, or a directory holding a diffusers AutoencoderKLWan's config.json (base_dim, z_dim,
// dim_mult, num_res_blocks, temperal_downsample) and its *.safetensors; bad_input otherwise.
struct vae_source {
    vae_config config;
    std::optional<std::filesystem::path> directory;
    bool has_weights = false;
};
vae_source resolve_vae(const std::string& text);

// Which halves of the model a workload runs.
enum class vae_parts { decoder, both };

struct vae_weights {
    vae_config config;
    vae_parts parts = vae_parts::decoder;
    std::map<std::string, at::Tensor> tensors; // diffusers names, without the "vae." prefix
    std::string source;

    const at::Tensor& at(const std::string& name) const; // throws std::logic_error naming it
    bool has(const std::string& name) const { return tensors.count(name) > 0; }
    c10::ScalarType dtype() const;
    c10::Device device() const;
    std::int64_t bytes() const;
    vae_weights to(c10::Device device, c10::ScalarType type) const;
};

struct vae_tensor_spec {
    std::string name;
    std::vector<std::int64_t> shape;
    double stdev = 0; // of the random init; 0: ones (a norm's gamma)
};
// Every tensor `parts` needs, with diffusers' names and shapes.
std::vector<vae_tensor_spec> vae_expected_tensors(const vae_config& c, vae_parts parts);

// Random weights, documented in docs/performance.md: every conv weight normal(0, 1/sqrt(fan_in))
// (fan_in = in channels x kernel volume), so that a unit-RMS input gives a unit-RMS output
// (the RMS norms before each conv then keep every block's input at unit RMS); the second conv
// of each residual block and the attention's output projection at half that, so the residual
// stream grows slowly; conv_out at 0.5/sqrt(fan_in), so the decoded pixels sit mostly inside
// [-1, 1] before the clamp; biases normal(0, 0.02); norm gammas 1. Generated on the CPU in
// float32 from `seed`, one sub-seed per tensor, then converted: the same seed gives the same
// weights on every device, and a bf16 model is the rounding of the fp32 one.
vae_weights random_vae_weights(const vae_config& c, vae_parts parts, c10::ScalarType type,
                               c10::Device device, std::uint64_t seed);

// Checks every tensor `parts` needs: present, of the expected shape, of a floating dtype; the
// first that is not is a bad_input naming the key.
void check_vae_checkpoint(const vae_config& c, vae_parts parts, const checkpoint& ck);
vae_weights load_vae_weights(const vae_config& c, vae_parts parts, const checkpoint& ck,
                             c10::ScalarType type, c10::Device device);

} // namespace fourfold::workloads::models
