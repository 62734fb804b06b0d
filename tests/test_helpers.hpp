#pragma once
// Small helpers shared by the test files: a temporary directory that cleans up after itself,
// whole-file reads and writes. POSIX only, see core/files.hpp for why not std::filesystem.
#include "fourfold/core/files.hpp"

#include <fstream>
#include <iterator>
#include <stdlib.h>
#include <string>

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

} // namespace fourfold::testing
