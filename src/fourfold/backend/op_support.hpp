#pragma once
// Whether libtorch has a kernel for an op in a dtype on a device: asked by name ("matmul",
// "softmax", ...), answered once per (device, op, dtype) by running the op on a tiny input and
// cached. A variant declares the ops it calls (variant_needs::ops), so "this libtorch lacks the
// kernel" is a skip decided before the variant runs, from the op's own trial, never by reading
// the text of an error a real call threw.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/dtype.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::backend {

// Why `op` cannot run in `t` on `dev`; nullopt when it can. Throws std::logic_error for an op
// name with no probe (see known_ops()).
std::optional<std::string> op_unsupported(device& dev, std::string_view op, dtype t);
// The op names a variant may declare.
std::vector<std::string> known_ops();

} // namespace fourfold::backend
