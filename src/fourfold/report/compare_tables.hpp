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

// One direction for every speed-up fourfold prints (run, compare, report): above 1, B (the
// treated run, or the variant) is faster than its baseline. op_time's statistic stays B/A of
// time (the verdicts read it); its speed-up is A/B, the CI inverted with it. throughput's
// statistic is B/A of tokens/s, already a speed-up.
compare::ratio_estimate as_speedup(const compare::ratio_estimate& r, ledger l);
double speedup_of(double ratio_b_over_a, ledger l);
// "1.234x"
std::string speedup_cell(double speedup);
std::string ratio_cell(const compare::ratio_estimate& r);
std::string p_cell(const std::optional<compare::u_test>& u);

} // namespace fourfold::report
