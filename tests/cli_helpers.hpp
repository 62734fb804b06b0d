#pragma once
// Runs the real `fourfold` binary through the shell and keeps its exit code, stdout and stderr.
#include "test_helpers.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

namespace fourfold::testing {

struct cli_result {
    int code = -1;
    std::string out, err;
};

inline cli_result run_binary(const std::string& args, const temp_dir& dir) {
    const auto out = dir / "stdout.txt";
    const auto err = dir / "stderr.txt";
    const std::string cmd =
        std::string(FOURFOLD_BINARY) + " " + args + " >" + out.string() + " 2>" + err.string();
    const int status = std::system(cmd.c_str());
    cli_result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
}

inline int line_count(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

} // namespace fourfold::testing
