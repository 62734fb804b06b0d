#pragma once
// The tables `fourfold run` prints: one per ledger, each in its own unit, then the records that
// were skipped or failed with their reasons.
#include "fourfold/core/record.hpp"

#include <ostream>
#include <vector>

namespace fourfold::report {

enum class table_format { text, markdown, html };

void print_ledger_tables(const std::vector<record>& records, std::ostream& out,
                         table_format format = table_format::text);

// "12.3", "1.23e-05": numbers for tables.
std::string fmt_num(double v, int digits = 3);
std::string fmt_gib(double bytes);

} // namespace fourfold::report
