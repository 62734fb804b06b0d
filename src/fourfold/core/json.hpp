#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>

namespace fourfold {

using json = nlohmann::json;

// The canonical text of a JSON value: keys sorted (nlohmann's object is an ordered std::map),
// no spaces. Two equal values always give the same text, so its hash can name them.
std::string canonical(const json& value);
// 64-bit FNV-1a of the canonical text, as 16 hex digits.
std::string canonical_hash(const json& value);
std::uint64_t fnv1a64(const std::string& text);

} // namespace fourfold
