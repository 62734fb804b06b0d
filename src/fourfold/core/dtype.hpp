#pragma once
// fourfold's own names for element types, independent of the libtorch version: float8 names
// parse on every build, and whether a build or device can hold them is a capability (backend/).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold {

enum class dtype { fp64, fp32, bf16, fp16, fp8_e4m3fn, fp8_e5m2 };

std::string_view to_string(dtype t);
std::optional<dtype> parse_dtype(std::string_view name);
std::vector<dtype> all_dtypes();
std::string dtype_names(); // "fp64, fp32, ..." for error messages
std::int64_t size_bytes(dtype t);
bool is_float8(dtype t);

} // namespace fourfold
