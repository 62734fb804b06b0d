#include "fourfold/workloads/linear_shapes.hpp"

#include "fourfold/core/text.hpp"

#include <fmt/format.h>
#include <map>
#include <stdexcept>
#include <utility>

namespace fourfold::workloads {
namespace detail {
extern const std::string_view k_linear_shapes_csv;
extern const std::string_view k_linear_shapes_origin;
} // namespace detail

namespace {

constexpr std::string_view k_header = "model,projection,n,k,source,also";

std::int64_t positive(const std::string& text, std::string_view what, std::string_view where) {
    std::uint64_t v = 0;
    if (!parse_uint(text, v) || v == 0 || v > (1ull << 31))
        throw std::logic_error(
            fmt::format("{}: {} '{}' is not a positive whole number", where, what, text));
    return static_cast<std::int64_t>(v);
}

} // namespace

std::vector<linear_shape> parse_linear_shapes(std::string_view csv, std::string_view origin) {
    std::vector<linear_shape> out;
    std::map<std::pair<std::int64_t, std::int64_t>, std::size_t> seen;
    const auto lines = split(csv, '\n');
    bool header = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto line = trim(lines[i]);
        if (line.empty())
            continue;
        const auto where = fmt::format("{} line {}", origin, i + 1);
        if (!header) {
            if (line != k_header)
                throw std::logic_error(
                    fmt::format("{}: header is '{}', expected '{}'", where, line, k_header));
            header = true;
            continue;
        }
        const auto f = split(line, ',');
        if (f.size() != 6)
            throw std::logic_error(
                fmt::format("{}: {} fields, expected 6 ({})", where, f.size(), k_header));
        linear_shape s;
        s.model = trim(f[0]);
        s.projection = trim(f[1]);
        s.n = positive(trim(f[2]), "n", where);
        s.k = positive(trim(f[3]), "k", where);
        s.source = trim(f[4]);
        if (s.model.empty() || s.projection.empty() || s.source.empty())
            throw std::logic_error(
                fmt::format("{}: model, projection and source must be named", where));
        for (const auto& a : split(f[5], ';'))
            if (!trim(a).empty())
                s.also.push_back(trim(a));
        const auto [it, fresh] = seen.emplace(std::make_pair(s.n, s.k), out.size());
        if (!fresh)
            throw std::logic_error(fmt::format("{}: ({}, {}) repeats line of {}; each shape is "
                                               "listed once (other layers go under 'also')",
                                               where, s.n, s.k, out[it->second].label()));
        out.push_back(std::move(s));
    }
    if (!header)
        throw std::logic_error(fmt::format("{}: empty", origin));
    return out;
}

const std::vector<linear_shape>& linear_shape_table() {
    static const std::vector<linear_shape> table = [] {
        auto t = parse_linear_shapes(detail::k_linear_shapes_csv, detail::k_linear_shapes_origin);
        if (t.size() != k_linear_shape_count)
            throw std::logic_error(fmt::format("{}: {} shapes, expected {}",
                                               detail::k_linear_shapes_origin, t.size(),
                                               k_linear_shape_count));
        return t;
    }();
    return table;
}

const linear_shape* find_linear_shape(std::int64_t n, std::int64_t k) {
    for (const auto& s : linear_shape_table())
        if (s.n == n && s.k == k)
            return &s;
    return nullptr;
}

} // namespace fourfold::workloads
