#include "fourfold/cli/commands.hpp"
#include "fourfold/compare/comparison.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/report/compare_tables.hpp"
#include "fourfold/store/result_store.hpp"

#include <fmt/format.h>
#include <iostream>
#include <sstream>

namespace fourfold::cli {

std::string compare_help_footer() {
    return fmt::format(
        "\n{}.\n"
        "Speed-ups are of B over one baseline (run A, or the --baseline-variant of one run), "
        "> 1 when B is faster (A/B of time, B/A of tokens/s), as in 'fourfold run' and the "
        "report; geometric means are taken per workload and variant over pairs of that one "
        "baseline; ratios from different baselines are never multiplied or chained.\n"
        "Exit codes: 0 compared; 1 with --fail-on-regression and any SLOWER or PASS->FAIL, or no "
        "pair at all; 2 bad input or a refused comparison; 3 internal or write error.\n"
        "A comparison is refused when A and B differ in anything not declared with "
        "--allow-diff NAME (comma list or repeated). Names:\n{}",
        compare::verdict_rule(compare::k_default_threshold), compare::diff_names_help());
}

int compare_command(const compare_options& o) {
    enum class fmt_kind { text, md, csv, json };
    fmt_kind kind;
    if (o.format == "text")
        kind = fmt_kind::text;
    else if (o.format == "md")
        kind = fmt_kind::md;
    else if (o.format == "csv")
        kind = fmt_kind::csv;
    else if (o.format == "json")
        kind = fmt_kind::json;
    else
        throw bad_input(
            fmt::format("--format '{}' is unknown; valid: text, md, csv, json", o.format));
    compare::compare_options options;
    options.threshold = compare::parse_threshold(o.threshold);
    options.allowed = compare::parse_allowed(o.allow_diff);
    options.baseline_variant = o.baseline_variant;
    check_output(o.output, o.db);
    const auto store = store::result_store::open(o.db, store::open_mode::read_only);
    const auto c = compare::compare_in_store(store, o.runs, options);

    std::ostringstream text;
    switch (kind) {
    case fmt_kind::text:
        report::print_comparison(c, text, report::table_format::text);
        break;
    case fmt_kind::md:
        report::print_comparison(c, text, report::table_format::markdown);
        break;
    case fmt_kind::csv:
        report::write_comparison_csv(c, text);
        break;
    case fmt_kind::json:
        text << c.to_json().dump(2) << '\n';
        break;
    }
    write_output(o.output, text.str());
    if (!o.fail_on_regression)
        return 0;
    // no pair at all rules no regression out: a gate that passes on nothing would pass anything
    if (c.op_time.empty() && c.throughput.empty() && c.correctness.empty() && c.memory.empty()) {
        std::cerr << "fourfold: --fail-on-regression: no pair of measured records was compared, "
                     "so no regression is ruled out\n";
        return static_cast<int>(exit_code::check_failed);
    }
    return c.has_regression() ? static_cast<int>(exit_code::check_failed) : 0;
}

} // namespace fourfold::cli
