#pragma once
// Small helpers shared by the test files: a temporary directory that cleans up after itself,
// whole-file reads and writes. POSIX only, see core/files.hpp for why not std::filesystem.
#include "fourfold/core/files.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdlib.h>
#include <string>
#include <sys/wait.h>

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
// Runs the real fourfold binary with `args`, capturing stdout and stderr through files in `dir`.
inline cli_result run_cli(const std::string& args, const temp_dir& dir) {
    const auto out = dir / "stdout.txt";
    const auto err = dir / "stderr.txt";
    const std::string cmd = std::string(FOURFOLD_BINARY) + " " + args + " >" + out + " 2>" + err;
    const int status = std::system(cmd.c_str());
    cli_result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    return r;
}
#endif

inline int line_count(const std::string& s) {
    return static_cast<int>(std::count(s.begin(), s.end(), '\n'));
}

} // namespace fourfold::testing
