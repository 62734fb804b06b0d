#pragma once
// Constant padding: the pad workload's variants and the VAE's causal convolutions (and its
// downsamplers' one-sided pads) call this one function, so the op's figures are about the code
// the model runs.
#include "fourfold/workloads/model_ops/op_path.hpp"

#include <ATen/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <cstdint>
#include <vector>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/pad.hpp"
#endif

namespace fourfold::workloads {
class call_context;
}

namespace fourfold::workloads::model_ops {

// `pads` in at::constant_pad_nd's order: (before, after) of the last dimension first, then the
// one before it, ...; non-negative (no cropping). stock: at::constant_pad_nd; composite: each
// padded dimension a cat with freshly allocated constant blocks (last dimension first), so every
// step allocates and writes a whole intermediate; native: fourfold's CUDA kernel (up to 5-D, any
// strides; one pass, every output element written once), launched on the call's stream, which
// needs `ctx`. The output is always a new tensor (also for all-zero pads).
at::Tensor pad(const at::Tensor& x, c10::IntArrayRef pads, double value, op_path path,
               const call_context* ctx = nullptr);

// `shape` padded by `pads` (in the order above; dimensions they do not name unpadded).
std::vector<std::int64_t> padded_shape(c10::IntArrayRef shape, c10::IntArrayRef pads);

#if FOURFOLD_WITH_KERNELS
// The native kernel's arguments for padding x (1 to 5 dimensions, any strides) into y
// (contiguous, of padded_shape(x.sizes(), pads)): what the native path launches, for a caller
// that owns its output (the dependent-launch gpu test).
kernels::pad_args native_pad_args(const at::Tensor& x, c10::IntArrayRef pads, double value,
                                  const at::Tensor& y);
#endif

// The elements the composite path allocates besides its output (constant blocks and the
// intermediates of all but the last padded dimension).
std::int64_t pad_composite_intermediate_elements(c10::IntArrayRef shape, c10::IntArrayRef pads);

} // namespace fourfold::workloads::model_ops
