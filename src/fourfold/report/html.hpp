#pragma once
// Text into HTML: every user-provided string (labels, params, reasons, provenance) passes here,
// so that a label like <script>alert(1)</script> shows as text.
#include <string>
#include <string_view>

namespace fourfold::report {

// Escapes & < > " ' (safe in text and in quoted attribute values alike).
std::string html_escape(std::string_view text);

} // namespace fourfold::report
