#pragma once
// Small string helpers shared by every layer.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold {

std::vector<std::string> split(std::string_view text, char sep);
std::string join(const std::vector<std::string>& parts, std::string_view sep);
std::string trim(std::string_view text);
bool starts_with(std::string_view text, std::string_view prefix);
// The first line of a message, trimmed (libtorch errors carry more lines after it).
std::string first_line(std::string_view text);

// The text with each control character (newline, tab, escape, DEL) written as \xNN: what is
// shown on one line of a message or a table stays on one line and cannot drive a terminal.
std::string escape_control(std::string_view text);
// `text` with every byte that does not begin a well-formed UTF-8 sequence replaced by U+FFFD:
// text read back from a store (any bytes a damaged or hostile file holds) stays printable and
// serialisable as JSON.
std::string valid_utf8(std::string_view text);

// "1.50 GiB", "512 B": bytes for people; the stored figure stays in bytes.
std::string human_bytes(double bytes);
// Parses a non-negative decimal integer with no sign, no spaces and no overflow.
bool parse_uint(std::string_view text, std::uint64_t& out);
// Parses a whole finite decimal number ("0.5", "2e-3"), nothing before or after it.
bool parse_double(std::string_view text, double& out);
// Now, UTC, ISO 8601 with milliseconds: "2026-11-29T14:40:55.123Z".
std::string utc_now_iso8601();

} // namespace fourfold
