#pragma once
// The safetensors header, parsed and validated without libtorch: the 8-byte little-endian length
// N, the N bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]},
// "__metadata__"}, every dtype, shape and offset checked, and the data section covered exactly
// (no overlap, no hole, nothing past its end). safetensors.hpp's reader calls these before it
// reads a byte of data; fuzz/fuzz_safetensors_header.cpp feeds them arbitrary bytes.
#include "fourfold/core/json.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::workloads::models {

// Headers larger than this are refused (the reference implementation's limit).
inline constexpr std::uint64_t k_safetensors_max_header_bytes = std::uint64_t{100} << 20;
// JSON nesting deeper than this is refused before parsing (a valid header nests 3 deep).
inline constexpr int k_safetensors_max_json_depth = 64;
// Most dimensions a tensor may have.
inline constexpr std::size_t k_safetensors_max_dims = 16;

// Bytes per element of a safetensors dtype ("BF16" -> 2); 0 when the name is unknown.
std::int64_t safetensors_dtype_bytes(std::string_view dtype);
// The format's dtype names, in its order, and as one text for messages ("BOOL, U8, ...").
std::vector<std::string> safetensors_dtype_names();
std::string safetensors_dtype_list();

struct safetensors_entry {
    std::string name;
    std::string dtype; // as the file names it: "BF16", "F8_E4M3", ...
    std::vector<std::int64_t> shape;
    std::uint64_t begin = 0; // byte offsets within the data section
    std::uint64_t end = 0;
    std::int64_t numel() const;
};

// The deepest bracket nesting of a JSON text, outside strings: checked before parsing so that a
// hostile text cannot recurse the parser (or the destructor of its result) into the stack.
int json_nesting_depth(std::string_view text);

// The header length the first 8 bytes of a file of `file_bytes` bytes give, checked: it must fit
// the file after those 8 bytes, be at most k_safetensors_max_header_bytes and hold at least "{}".
// `where` names the file in the bad_input thrown otherwise.
std::uint64_t safetensors_header_length(const unsigned char (&raw)[8], std::uint64_t file_bytes,
                                        const std::string& where);

struct safetensors_header {
    std::vector<safetensors_entry> entries; // in the header's order (nlohmann's: by name)
    json metadata = json::object();         // "__metadata__", or an empty object
};

// The header's JSON text, validated against a data section of `data_bytes` bytes; throws
// bad_input naming `where` and the first problem.
safetensors_header parse_safetensors_header(std::string_view text, std::uint64_t data_bytes,
                                            const std::string& where);

// A whole safetensors file held in memory: its length, then its header, validated against the
// bytes that follow (what safetensors_file checks of a file on disk, without reading the data).
safetensors_header parse_safetensors_bytes(std::string_view file, const std::string& where);

} // namespace fourfold::workloads::models
