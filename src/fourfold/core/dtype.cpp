#include "fourfold/core/dtype.hpp"

#include "fourfold/core/text.hpp"

#include <array>
#include <utility>

namespace fourfold {
namespace {

struct dtype_row {
    dtype type;
    std::string_view name;
    std::int64_t bytes;
};

constexpr std::array k_rows{
    dtype_row{dtype::fp64, "fp64", 8},
    dtype_row{dtype::fp32, "fp32", 4},
    dtype_row{dtype::bf16, "bf16", 2},
    dtype_row{dtype::fp16, "fp16", 2},
    dtype_row{dtype::fp8_e4m3fn, "fp8_e4m3fn", 1},
    dtype_row{dtype::fp8_e5m2, "fp8_e5m2", 1},
};

constexpr std::array<std::pair<std::string_view, dtype>, 8> k_aliases{{
    {"float64", dtype::fp64},
    {"float32", dtype::fp32},
    {"bfloat16", dtype::bf16},
    {"float16", dtype::fp16},
    {"half", dtype::fp16},
    {"fp8", dtype::fp8_e4m3fn},
    {"float8_e4m3fn", dtype::fp8_e4m3fn},
    {"float8_e5m2", dtype::fp8_e5m2},
}};

const dtype_row& row(dtype t) {
    for (const auto& r : k_rows)
        if (r.type == t)
            return r;
    return k_rows[0];
}

} // namespace

std::string_view to_string(dtype t) {
    return row(t).name;
}
std::int64_t size_bytes(dtype t) {
    return row(t).bytes;
}
bool is_float8(dtype t) {
    return t == dtype::fp8_e4m3fn || t == dtype::fp8_e5m2;
}

std::optional<dtype> parse_dtype(std::string_view name) {
    for (const auto& r : k_rows)
        if (r.name == name)
            return r.type;
    for (const auto& [alias, t] : k_aliases)
        if (alias == name)
            return t;
    return std::nullopt;
}

std::vector<dtype> all_dtypes() {
    std::vector<dtype> out;
    out.reserve(k_rows.size());
    for (const auto& r : k_rows)
        out.push_back(r.type);
    return out;
}

std::string dtype_names() {
    std::vector<std::string> names;
    names.reserve(k_rows.size());
    for (const auto& r : k_rows)
        names.emplace_back(r.name);
    return join(names, ", ");
}

} // namespace fourfold
