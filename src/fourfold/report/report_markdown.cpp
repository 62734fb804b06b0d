#include "fourfold/core/build_info.hpp"
#include "fourfold/core/figures.hpp"
#include "fourfold/core/memory_levels.hpp"
#include "fourfold/core/text.hpp"
#include "fourfold/report/compare_tables.hpp"
#include "fourfold/report/html.hpp"
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/report_parts.hpp"
#include "fourfold/report/svg_chart.hpp"
#include "fourfold/report/text_table.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/run_state.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>
#include <sstream>

namespace fourfold::report::detail {

void write_markdown(const report_data& d, std::ostream& out) {
    out << "# fourfold report\n\n"
        << fmt::format("generated {} by fourfold {} (git {}); charts are in the HTML view "
                       "(fourfold report ... -o report.html)\n\n",
                       utc_now_iso8601(), this_build().version, this_build().git_sha);
    runs_table(d, out, table_format::markdown);
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        if (d.within[i])
            print_comparison(*d.within[i], out, table_format::markdown);
        else if (!d.within_why_not[i].empty())
            out << "- "
                << markdown_escape(compare::run_text(d.runs[i]) + ": " + d.within_why_not[i])
                << "\n\n";
    }
    for (std::size_t i = 0; i < d.across.size(); ++i) {
        if (d.across[i])
            print_comparison(*d.across[i], out, table_format::markdown);
        else
            out << "- " << markdown_escape(d.across_refused[i]) << "\n\n";
    }
    for (std::size_t i = 0; i < d.runs.size(); ++i) {
        out << "## ledgers of " << markdown_escape(compare::run_text(d.runs[i])) << "\n\n";
        print_ledger_tables(plain_records(d.records[i]), out, table_format::markdown);
    }
}

// One row per figure shown: tidy, so every chart's data can be re-plotted from it.

} // namespace fourfold::report::detail
