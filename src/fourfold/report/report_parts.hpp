#pragma once
// What the report's three formats share (report.cpp loads and compares; report_html.cpp,
// report_markdown.cpp and report_csv.cpp each write one format). Private to report/.
#include "fourfold/report/ledger_tables.hpp"
#include "fourfold/report/report.hpp"

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold::report::detail {

std::string job_label(const job_id& j, bool with_variant);
std::string lower(std::string_view v);
std::vector<record> plain_records(const std::vector<store::stored_record>& v);
std::string device_name(const store::run_row& r);
// The runs the report covers, with their state, device and build.
void runs_table(const report_data& d, std::ostream& out, table_format format);

void write_html(const report_data& d, std::ostream& out);
void write_markdown(const report_data& d, std::ostream& out);
void write_csv(const report_data& d, std::ostream& out);

} // namespace fourfold::report::detail
