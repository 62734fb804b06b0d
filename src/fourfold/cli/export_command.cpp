#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/store/export.hpp"

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <sstream>

namespace fourfold::cli {

int export_command(const export_options& o) {
    store::export_request req;
    req.runs = o.runs;
    req.with_samples = o.samples;
    if (o.format == "json") req.format = store::export_format::json;
    else if (o.format == "csv") req.format = store::export_format::csv;
    else throw bad_input(fmt::format("--format '{}' is unknown; valid: json, csv", o.format));
    const auto store = store::result_store::open(o.db, store::open_mode::read_only);
    std::ostringstream text;
    store::export_store(store, req, text);
    if (o.output.empty()) {
        std::cout << text.str();
        return 0;
    }
    std::ofstream file(o.output);
    if (!file) throw bad_input(fmt::format("cannot write '{}'; give -o a writable path", o.output));
    file << text.str();
    return 0;
}

} // namespace fourfold::cli
