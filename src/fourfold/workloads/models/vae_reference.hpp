#pragma once
// The VAE's float64 reference, written out on its own (it shares no code with the session it
// checks, only the tile layout): every causal conv over the whole clip at once, zero-padded in
// front, no caches and no frame-at-a-time loop; the time upsamplers pass the first frame through
// and double the rest. That the session's causal, cached, frame-by-frame decode equals this is
// what the check shows: the conv halos across frames are computed, not assumed away. Spatial
// tiles are part of the function (a tile does not see its neighbours), so each tile is decoded
// whole and blended as the session blends. Bounded: one tile's activations at a time.
#include "fourfold/workloads/models/vae_weights.hpp"

#include <ATen/Tensor.h>
#include <cstdint>

namespace fourfold::workloads::models {

// `w`: the weights on the CPU in any floating dtype (upcast here to float64 once per call).
// z [B, z, T, h, w] -> [B, 3, 1 + 4 (T - 1), 8 h, 8 w], float64, clamped to [-1, 1].
at::Tensor vae_reference_decode(const vae_weights& w, const at::Tensor& z, std::int64_t tile,
                                std::int64_t stride);
// x [B, 3, 1, H, W] -> its encode (the latent mean) then decode, float64, clamped.
at::Tensor vae_reference_roundtrip(const vae_weights& w, const at::Tensor& x);

} // namespace fourfold::workloads::models
