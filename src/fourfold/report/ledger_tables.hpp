#pragma once
// The tables `fourfold run` prints: one per ledger, each in its own unit, then the records that
// were skipped or failed with their reasons.
#include "fourfold/core/record.hpp"

#include <ostream>
#include <vector>

namespace fourfold::report {

enum class table_format { text, markdown, html };
// per_ledger: one table per ledger; per_workload: one table per ledger and workload (what a
// suite prints); automatic: per_workload when the records span more than one workload.
enum class table_layout { automatic, per_ledger, per_workload };

// Columns drawn from a record's "facts" appear only in tables where some record has them:
// op_time "layer" (facts.layer) and "host sync" (a variant that synchronises with the host);
// memory "weights [MiB]" (facts.weight_storage_bytes), "intermediates [MiB]"
// (facts.intermediate_bytes, what a variant allocates besides its output) and the first call's
// driver and allocated peaks (figures.first_call).
void print_ledger_tables(const std::vector<record>& records, std::ostream& out,
                         table_format format = table_format::text,
                         table_layout layout = table_layout::automatic);

// "12.3", "1.23e-05": numbers for tables.
std::string fmt_num(double v, int digits = 3);
std::string fmt_gib(double bytes);

} // namespace fourfold::report
