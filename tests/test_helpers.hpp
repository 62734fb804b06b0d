#pragma once
// Small helpers shared by the test files: a temporary directory that cleans up after itself,
// whole-file reads and writes. POSIX only, see core/files.hpp for why not std::filesystem.
#include "fourfold/core/files.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdlib.h>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace fourfold::testing {

class temp_dir {
  public:
    temp_dir() {
        char tmpl[] = "/tmp/fourfold-test-XXXXXX";
        m_path = mkdtemp(tmpl);
    }
    ~temp_dir() { remove_tree(m_path); }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    std::string operator/(const std::string& name) const { return m_path + "/" + name; }
    const std::string& path() const { return m_path; }

  private:
    std::string m_path;
};

inline std::string read_file(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::string& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

struct cli_result {
    int code = -1;
    std::string out, err;
};

#ifdef FOURFOLD_BINARY
// Runs the real fourfold binary with `args`, capturing stdout and stderr through files in `dir`;
// `shell_prefix` runs first in the same subshell (a ulimit, a redirection) and may end in a
// command that runs the binary (setpriv ...).
inline cli_result run_cli_in(const std::string& shell_prefix, const std::string& args,
                             const temp_dir& dir) {
    const auto out = dir / "stdout.txt";
    const auto err = dir / "stderr.txt";
    const std::string cmd = "(" + shell_prefix + " " + std::string(FOURFOLD_BINARY) + " " + args +
                            ") >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    cli_result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
}

inline cli_result run_cli(const std::string& args, const temp_dir& dir) {
    return run_cli_in("exec", args, dir);
}
#endif

// The identity cells (workload, variant, dtype, params) of each row of the table titled `title`
// in a printed run, in order: the lines after the title, up to a blank one, that begin with
// `workload`.
inline std::vector<std::string> table_identities(const std::string& text, const std::string& title,
                                                 const std::string& workload) {
    std::vector<std::string> rows;
    const auto at = text.find(title);
    if (at == std::string::npos)
        return rows;
    std::istringstream in(text.substr(at));
    std::string line;
    std::getline(in, line); // the title
    while (std::getline(in, line) && !line.empty()) {
        if (line.rfind(workload + " ", 0) != 0)
            continue;
        std::istringstream fields(line);
        std::string w, v, d, params;
        fields >> w >> v >> d >> params;
        rows.push_back(w + " " + v + " " + d + " " + params);
    }
    return rows;
}

inline int line_count(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

} // namespace fourfold::testing
