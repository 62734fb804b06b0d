#include "fourfold/cli/commands.hpp"
#include "fourfold/compare/comparison.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/report/compare_tables.hpp"
#include "fourfold/store/result_store.hpp"

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fourfold::cli {

std::string compare_help_footer() {
    return fmt::format(
        "\n{}.\n"
        "Ratios are B/A against one baseline (run A, or the --baseline-variant of one run); "
        "geometric means are taken per workload and variant over pairs of that one baseline; "
        "ratios from different baselines are never multiplied or chained.\n"
        "Exit codes: 0 compared; 1 with --fail-on-regression and any SLOWER or PASS->FAIL; "
        "2 bad input or a refused comparison; 3 internal error.\n"
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
    if (o.output.empty()) {
        std::cout << text.str();
    } else {
        std::ofstream file(o.output);
        if (!file)
            throw bad_input(fmt::format("cannot write '{}'; give -o a writable path", o.output));
        file << text.str();
    }
    return o.fail_on_regression && c.has_regression() ? static_cast<int>(exit_code::check_failed)
                                                      : 0;
}

} // namespace fourfold::cli
