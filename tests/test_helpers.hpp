#pragma once
// Small helpers shared by the test files: a temporary directory that cleans up after itself.
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>

namespace fourfold::testing {

class temp_dir {
public:
    temp_dir() {
        char tmpl[] = "/tmp/fourfold-test-XXXXXX";
        m_path = mkdtemp(tmpl);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(m_path, ec);
    }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    std::filesystem::path operator/(const std::string& name) const { return m_path / name; }
    const std::filesystem::path& path() const { return m_path; }

private:
    std::filesystem::path m_path;
};

inline std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void write_file(const std::filesystem::path& p, const std::string& text) {
    std::ofstream out(p, std::ios::binary);
    out << text;
}

} // namespace fourfold::testing
