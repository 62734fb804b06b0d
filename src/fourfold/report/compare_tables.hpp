#pragma once
// How `fourfold compare` prints: the runs, the treatment, then one table per ledger in its own
// unit, the records not compared and not paired, and a legend with the verdict rule. Text and
// Markdown share the layout; CSV is one row per compared quantity; JSON is comparison::to_json.
#include "fourfold/compare/comparison.hpp"
#include "fourfold/report/ledger_tables.hpp"

#include <ostream>

namespace fourfold::report {

void print_comparison(const compare::comparison& c, std::ostream& out, table_format format);
void write_comparison_csv(const compare::comparison& c, std::ostream& out);

// "1.234 [1.201, 1.260]"-style cells and the ratio as people say it ("12.3 % less time").
std::string ratio_cell(const compare::ratio_estimate& r);
std::string p_cell(const std::optional<compare::u_test>& u);

} // namespace fourfold::report
