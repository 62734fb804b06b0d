#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fourfold {

using json = nlohmann::json;

// The canonical text of a JSON value: keys sorted (nlohmann's object is an ordered std::map),
// no spaces. Two equal values always give the same text, so its hash can name them.
std::string canonical(const json& value);
// 64-bit FNV-1a of the canonical text, as 16 hex digits.
std::string canonical_hash(const json& value);
std::uint64_t fnv1a64(const std::string& text);
// The number at a JSON pointer ("/stats/median") of an object; nullopt when absent or not a number.
std::optional<double> number_at(const json& value, const char* pointer);

} // namespace fourfold
