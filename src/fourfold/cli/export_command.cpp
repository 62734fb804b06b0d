#include "fourfold/cli/commands.hpp"
#include "fourfold/core/error.hpp"
#include "fourfold/core/files.hpp"
#include "fourfold/store/export.hpp"
#include "fourfold/store/result_store.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <sstream>

namespace fourfold::cli {

// The output helpers of export, compare and report: each writes its whole text at the end.

void check_output(const std::string& path, const std::string& store_path) {
    if (path.empty())
        return;
    store::refuse_store_as_output(path, store_path);
    if (is_directory(path))
        throw bad_input(
            fmt::format("cannot write '{}': it is a directory; give a file path", path));
    const auto dir = directory_of(path);
    if (!is_directory(dir) || !is_writable(dir))
        throw bad_input(fmt::format(
            "cannot write '{}': {}; give a path in a writable directory", path,
            is_directory(dir) ? "its directory is not writable" : "its directory does not exist"));
}

void write_output(const std::string& path, const std::string& text) {
    if (!path.empty()) {
        write_file_atomically(path, text);
        return;
    }
    // a closed or full standard output (a pipe to nowhere, /dev/full) is a failed write too
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
        throw write_error(fmt::format("writing standard output failed: {}", std::strerror(errno)));
}

int export_command(const export_options& o) {
    store::export_request req;
    req.runs = o.runs;
    req.with_samples = o.samples;
    if (o.format == "json")
        req.format = store::export_format::json;
    else if (o.format == "csv")
        req.format = store::export_format::csv;
    else
        throw bad_input(fmt::format("--format '{}' is unknown; valid: json, csv", o.format));
    check_output(o.output, o.db);
    const auto store = store::result_store::open(o.db, store::open_mode::read_only);
    std::ostringstream text;
    store::export_store(store, req, text);
    write_output(o.output, text.str());
    return 0;
}

} // namespace fourfold::cli
