#include "fourfold/workloads/models/safetensors_header.hpp"

#include "fourfold/core/error.hpp"
#include "fourfold/core/text.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace fourfold::workloads::models {
namespace {

struct dtype_row {
    const char* name;
    std::int64_t bytes;
};
// The format's dtypes (safetensors 0.4); every one is checked for size, the floating ones and
// the signed integers read into libtorch tensors (safetensors.cpp).
constexpr dtype_row k_dtypes[] = {{"BOOL", 1}, {"U8", 1},      {"I8", 1},     {"I16", 2},
                                  {"U16", 2},  {"I32", 4},     {"U32", 4},    {"I64", 8},
                                  {"U64", 8},  {"F16", 2},     {"BF16", 2},   {"F32", 4},
                                  {"F64", 8},  {"F8_E4M3", 1}, {"F8_E5M2", 1}};

std::string shape_text(const std::vector<std::int64_t>& shape) {
    std::vector<std::string> parts;
    parts.reserve(shape.size());
    for (const auto d : shape)
        parts.push_back(std::to_string(d));
    return fmt::format("[{}]", join(parts, ", "));
}

safetensors_entry parse_entry(const std::string& name, const json& v, const std::string& where) {
    if (!v.is_object())
        throw bad_input(fmt::format("{}: tensor '{}' is not an object", where, name));
    safetensors_entry e;
    e.name = name;
    if (!v.contains("dtype") || !v["dtype"].is_string())
        throw bad_input(fmt::format("{}: tensor '{}' has no dtype string", where, name));
    e.dtype = v["dtype"].get<std::string>();
    const auto element = safetensors_dtype_bytes(e.dtype);
    if (element == 0)
        throw bad_input(fmt::format("{}: tensor '{}' has dtype '{}'; valid: {}", where, name,
                                    e.dtype, safetensors_dtype_list()));
    if (!v.contains("shape") || !v["shape"].is_array())
        throw bad_input(fmt::format("{}: tensor '{}' has no shape list", where, name));
    if (v["shape"].size() > k_safetensors_max_dims)
        throw bad_input(fmt::format("{}: tensor '{}' has {} dimensions; at most {} are accepted",
                                    where, name, v["shape"].size(), k_safetensors_max_dims));
    unsigned __int128 numel = 1;
    for (const auto& d : v["shape"]) {
        if (!d.is_number_unsigned())
            throw bad_input(
                fmt::format("{}: tensor '{}' has shape entry {}, not a whole number >= 0", where,
                            name, d.dump()));
        const auto n = d.get<std::uint64_t>();
        if (n > (std::uint64_t{1} << 62))
            throw bad_input(
                fmt::format("{}: tensor '{}' has dimension {}, too large", where, name, n));
        numel *= n;
        if (numel > (static_cast<unsigned __int128>(1) << 62))
            throw bad_input(fmt::format("{}: tensor '{}' has a shape whose element count overflows",
                                        where, name));
        e.shape.push_back(static_cast<std::int64_t>(n));
    }
    const auto& off = v.contains("data_offsets") ? v["data_offsets"] : json();
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() ||
        !off[1].is_number_unsigned())
        throw bad_input(fmt::format("{}: tensor '{}' needs data_offsets [begin, end] of whole "
                                    "numbers, got {}",
                                    where, name, off.dump()));
    e.begin = off[0].get<std::uint64_t>();
    e.end = off[1].get<std::uint64_t>();
    if (e.end < e.begin)
        throw bad_input(
            fmt::format("{}: tensor '{}' has data_offsets [{}, {}] that end before they "
                        "begin",
                        where, name, e.begin, e.end));
    const auto need = numel * static_cast<unsigned __int128>(element);
    if (static_cast<unsigned __int128>(e.end - e.begin) != need)
        throw bad_input(fmt::format("{}: tensor '{}' holds {} bytes but shape {} of {} needs {} "
                                    "({} bytes per element): wrong dtype size or shape",
                                    where, name, e.end - e.begin, shape_text(e.shape), e.dtype,
                                    static_cast<std::uint64_t>(need), element));
    return e;
}

} // namespace

std::int64_t safetensors_dtype_bytes(std::string_view dtype) {
    for (const auto& d : k_dtypes)
        if (dtype == d.name)
            return d.bytes;
    return 0;
}

std::vector<std::string> safetensors_dtype_names() {
    std::vector<std::string> names;
    for (const auto& d : k_dtypes)
        names.emplace_back(d.name);
    return names;
}

std::string safetensors_dtype_list() {
    return join(safetensors_dtype_names(), ", ");
}

std::int64_t safetensors_entry::numel() const {
    std::int64_t n = 1;
    for (const auto d : shape)
        n *= d;
    return n;
}

int json_nesting_depth(std::string_view text) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (const char ch : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (ch == '\\')
                escaped = true;
            else if (ch == '"')
                in_string = false;
            continue;
        }
        if (ch == '"')
            in_string = true;
        else if (ch == '{' || ch == '[')
            deepest = std::max(deepest, ++depth);
        else if (ch == '}' || ch == ']')
            --depth;
    }
    return deepest;
}

std::uint64_t safetensors_header_length(const unsigned char (&raw)[8], std::uint64_t file_bytes,
                                        const std::string& where) {
    if (file_bytes < 8)
        throw bad_input(fmt::format("{}: {} bytes is too short for the 8-byte header length "
                                    "(truncated?)",
                                    where, file_bytes));
    std::uint64_t header_bytes = 0;
    for (int i = 7; i >= 0; --i)
        header_bytes = (header_bytes << 8) | raw[i];
    if (header_bytes > file_bytes - 8)
        throw bad_input(fmt::format("{}: header length {} runs past the end of the file ({} "
                                    "bytes; truncated or not safetensors?)",
                                    where, header_bytes, file_bytes));
    if (header_bytes > k_safetensors_max_header_bytes)
        throw bad_input(fmt::format("{}: header length {} is above the {} bytes accepted", where,
                                    header_bytes, k_safetensors_max_header_bytes));
    if (header_bytes < 2)
        throw bad_input(
            fmt::format("{}: header length {} cannot hold a JSON object", where, header_bytes));
    return header_bytes;
}

safetensors_header parse_safetensors_header(std::string_view text, std::uint64_t data_bytes,
                                            const std::string& where) {
    if (json_nesting_depth(text) > k_safetensors_max_json_depth)
        throw bad_input(fmt::format("{}: header JSON nests deeper than {} levels", where,
                                    k_safetensors_max_json_depth));

    std::set<std::string> seen;
    std::string duplicate;
    const json::parser_callback_t unique_keys = [&](int depth, json::parse_event_t event,
                                                    json& parsed) {
        if (depth == 1 && event == json::parse_event_t::key && parsed.is_string() &&
            !seen.insert(parsed.get<std::string>()).second && duplicate.empty())
            duplicate = parsed.get<std::string>();
        return true;
    };
    json header;
    try {
        header = json::parse(text.begin(), text.end(), unique_keys);
    } catch (const json::exception& e) {
        throw bad_input(fmt::format("{}: header is not valid JSON ({})", where, e.what()));
    }
    if (!duplicate.empty())
        throw bad_input(
            fmt::format("{}: tensor '{}' is named twice in the header", where, duplicate));
    if (!header.is_object())
        throw bad_input(fmt::format("{}: header is not a JSON object", where));

    safetensors_header out;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            if (!it.value().is_object())
                throw bad_input(fmt::format("{}: __metadata__ is not an object", where));
            out.metadata = it.value();
            continue;
        }
        auto e = parse_entry(it.key(), it.value(), where);
        if (e.end > data_bytes)
            throw bad_input(fmt::format("{}: tensor '{}' has data_offsets [{}, {}] past the end "
                                        "of the data ({} bytes; truncated file?)",
                                        where, e.name, e.begin, e.end, data_bytes));
        out.entries.push_back(std::move(e));
    }
    // The data must be covered exactly, in order, with no overlap and no hole.
    std::vector<const safetensors_entry*> order;
    for (const auto& e : out.entries)
        order.push_back(&e);
    std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
        return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
    });
    std::uint64_t cursor = 0;
    const safetensors_entry* previous = nullptr;
    for (const auto* e : order) {
        if (e->begin < cursor)
            throw bad_input(fmt::format("{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap",
                                        where, previous->name, previous->begin, previous->end,
                                        e->name, e->begin, e->end));
        if (e->begin > cursor)
            throw bad_input(fmt::format("{}: data bytes [{}, {}) belong to no tensor (a hole "
                                        "before '{}')",
                                        where, cursor, e->begin, e->name));
        cursor = e->end;
        previous = e;
    }
    if (cursor != data_bytes)
        throw bad_input(fmt::format("{}: the data section holds {} bytes but the tensors cover "
                                    "{}",
                                    where, data_bytes, cursor));
    return out;
}

safetensors_header parse_safetensors_bytes(std::string_view file, const std::string& where) {
    unsigned char raw[8] = {};
    const auto size = static_cast<std::uint64_t>(file.size());
    if (size >= 8)
        std::copy_n(reinterpret_cast<const unsigned char*>(file.data()), 8, raw);
    const auto n = safetensors_header_length(raw, size, where);
    return parse_safetensors_header(file.substr(8, static_cast<std::size_t>(n)), size - 8 - n,
                                    where);
}

} // namespace fourfold::workloads::models
