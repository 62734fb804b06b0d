#pragma once
// Rotary position embedding tables: the inverse frequencies of Hugging Face's "default" and
// "llama3" rope types, computed once in double. The decoder session rounds them to float32 and
// builds its cos/sin tables as Hugging Face does; the float64 reference keeps them in double.
#include "fourfold/workloads/models/model_config.hpp"

#include <ATen/Tensor.h>
#include <c10/core/ScalarType.h>
#include <vector>

namespace fourfold::workloads::models {

// head_dim / 2 inverse frequencies, Llama 3.1's scaling applied when the config asks for it.
std::vector<double> rope_inv_freq(const model_config& c);
// The same as a CPU tensor of `type`.
at::Tensor rope_inv_freq_tensor(const model_config& c, c10::ScalarType type);

} // namespace fourfold::workloads::models
