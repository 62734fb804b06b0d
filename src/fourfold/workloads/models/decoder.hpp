#pragma once
// The decoder architectures (Llama 3, Qwen3, Qwen3-MoE) built from libtorch ops, one concern a
// header: the weights (random or from a checkpoint), the session that decodes with a static KV
// cache, and the float64 CPU reference of the same function.
#include "fourfold/workloads/models/decoder_reference.hpp"
#include "fourfold/workloads/models/decoder_session.hpp"
#include "fourfold/workloads/models/decoder_weights.hpp"
