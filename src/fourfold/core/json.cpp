#include "fourfold/core/json.hpp"

#include <fmt/format.h>

namespace fourfold {

std::string canonical(const json& value) {
    return value.dump(-1, ' ', false);
}

std::uint64_t fnv1a64(const std::string& text) {
    std::uint64_t hash = 0xcbf29ce484222325ull;
    for (const unsigned char c : text) {
        hash ^= c;
        hash *= 0x100000001b3ull;
    }
    return hash;
}

std::string canonical_hash(const json& value) {
    return fmt::format("{:016x}", fnv1a64(canonical(value)));
}

std::optional<double> number_at(const json& value, const char* pointer) {
    if (!value.is_object())
        return std::nullopt;
    const json::json_pointer p{pointer};
    if (!value.contains(p) || !value.at(p).is_number())
        return std::nullopt;
    return value.at(p).get<double>();
}

} // namespace fourfold
