#pragma once
// fourfold dtype <-> libtorch ScalarType. Float8 maps only where the build has it.
#include "fourfold/core/dtype.hpp"

#include <c10/core/ScalarType.h>
#include <optional>

namespace fourfold::backend {

std::optional<c10::ScalarType> to_scalar_type(dtype t);
std::optional<dtype> from_scalar_type(c10::ScalarType st);
// Like to_scalar_type, but throws bad_input saying why this build cannot hold the type.
c10::ScalarType scalar_type_or_throw(dtype t);

} // namespace fourfold::backend
