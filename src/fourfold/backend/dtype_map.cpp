#include "fourfold/backend/dtype_map.hpp"

#include "fourfold/backend/torch_features.hpp"
#include "fourfold/core/error.hpp"

#include <fmt/format.h>

namespace fourfold::backend {

std::optional<c10::ScalarType> to_scalar_type(dtype t) {
    switch (t) {
    case dtype::fp64:
        return c10::ScalarType::Double;
    case dtype::fp32:
        return c10::ScalarType::Float;
    case dtype::bf16:
        return c10::ScalarType::BFloat16;
    case dtype::fp16:
        return c10::ScalarType::Half;
#if FOURFOLD_HAS_FLOAT8
    case dtype::fp8_e4m3fn:
        return c10::ScalarType::Float8_e4m3fn;
    case dtype::fp8_e5m2:
        return c10::ScalarType::Float8_e5m2;
#else
    case dtype::fp8_e4m3fn:
    case dtype::fp8_e5m2:
        return std::nullopt;
#endif
    }
    return std::nullopt;
}

std::optional<dtype> from_scalar_type(c10::ScalarType st) {
    for (const auto t : all_dtypes()) {
        const auto mapped = to_scalar_type(t);
        if (mapped && *mapped == st)
            return t;
    }
    return std::nullopt;
}

c10::ScalarType scalar_type_or_throw(dtype t) {
    if (const auto st = to_scalar_type(t))
        return *st;
    throw bad_input(fmt::format("dtype {} is not available in libtorch {}.{} (float8 types "
                                "arrive in 2.1); use fp32, bf16 or fp16",
                                to_string(t), TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR));
}

} // namespace fourfold::backend
