#pragma once
// `fourfold report RUN ...`: one self-contained HTML file (inline SVG charts, inline styles, no
// script, a Content-Security-Policy that forbids fetching anything), or the same data as
// Markdown or CSV. Comparisons inside follow `fourfold compare`: each run's variants against a
// baseline variant, and every later run against the first run; a pair of runs that differ
// beyond the declared treatment is shown as refused, not charted.
#include "fourfold/compare/comparison.hpp"
#include "fourfold/store/result_store.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace fourfold::report {

enum class report_format { html, markdown, csv };

struct report_request {
    std::vector<std::string>
        runs; // ids or labels, in the order given; the first is the baseline run
    std::string baseline_variant = "stock"; // within each run
    compare::compare_options options;       // threshold and --allow-diff for run-to-run comparisons
};

// Everything the report shows, loaded and compared once, written in any format.
struct report_data {
    std::vector<store::run_row> runs;
    std::vector<std::vector<store::stored_record>> records; // per run, with samples
    std::vector<std::optional<compare::comparison>> within; // per run: variants vs baseline variant
    std::vector<std::string> within_why_not;                // per run: why there is none
    // runs[i] against runs[0] for i >= 1 (index i - 1); refused: the reason instead
    std::vector<std::optional<compare::comparison>> across;
    std::vector<std::string> across_refused;
    std::string baseline_variant;
    double threshold = compare::k_default_threshold;
};

report_data load_report(const store::result_store& store, const report_request& request);
void write_report(const report_data& data, report_format format, std::ostream& out);

// What draws the charts, as the report states it.
std::string chart_engine_text();

} // namespace fourfold::report
