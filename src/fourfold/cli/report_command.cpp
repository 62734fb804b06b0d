#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/report/report.hpp"
#include "fourfold/store/result_store.hpp"

#include <fmt/format.h>
#include <iostream>
#include <sstream>

namespace fourfold::cli {
namespace {

report::report_format format_of(const report_options& o) {
    std::string name = o.format;
    if (name.empty() && !o.output.empty()) {
        const auto base = base_name(o.output);
        const auto dot = base.find_last_of('.');
        const auto ext = dot == std::string::npos || dot == 0 ? std::string() : base.substr(dot);
        if (ext == ".html" || ext == ".htm")
            name = "html";
        else if (ext == ".md")
            name = "md";
        else if (ext == ".csv")
            name = "csv";
        else
            throw bad_input(fmt::format("-o '{}': cannot tell the format from '{}'; name the file "
                                        ".html, .md or .csv, or give --format html|md|csv",
                                        o.output, ext));
    }
    if (name.empty() || name == "html")
        return report::report_format::html;
    if (name == "md")
        return report::report_format::markdown;
    if (name == "csv")
        return report::report_format::csv;
    throw bad_input(fmt::format("--format '{}' is unknown; valid: html, md, csv", name));
}

} // namespace

int report_command(const report_options& o) {
    const auto format = format_of(o);
    report::report_request request;
    request.runs = o.runs;
    request.baseline_variant = o.baseline_variant;
    request.options.threshold = compare::parse_threshold(o.threshold);
    request.options.allowed = compare::parse_allowed(o.allow_diff);
    check_output(o.output, o.db);
    const auto store = store::result_store::open(o.db, store::open_mode::read_only);
    const auto data = report::load_report(store, request);
    std::ostringstream text;
    report::write_report(data, format, text);
    write_output(o.output, text.str());
    if (!o.output.empty())
        std::cerr << fmt::format("fourfold: report of {} run(s) written to {}\n", data.runs.size(),
                                 o.output);
    return 0;
}

} // namespace fourfold::cli
