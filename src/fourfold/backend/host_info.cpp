#include "fourfold/backend/host_info.hpp"

#include "fourfold/core/text.hpp"

#include <fstream>
#include <sstream>
#include <sys/utsname.h>
#include <thread>
#include <unistd.h>

namespace fourfold::backend {
namespace {

std::string read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return trim(line);
}

std::string field_of(const std::string& path, const std::string& key, char sep) {
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const auto pos = line.find(sep);
        if (pos == std::string::npos)
            continue;
        if (trim(line.substr(0, pos)) == key)
            return trim(line.substr(pos + 1));
    }
    return {};
}

std::int64_t parse_cache_size(const std::string& text) {
    // sysfs writes "32768K" or "36M"
    if (text.empty())
        return 0;
    std::uint64_t n = 0;
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
        ++digits;
    if (!parse_uint(text.substr(0, digits), n))
        return 0;
    const char unit = digits < text.size() ? text[digits] : ' ';
    const std::int64_t scale = unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1;
    return static_cast<std::int64_t>(n) * scale;
}

} // namespace

std::string host_cpu_model() {
    auto model = field_of("/proc/cpuinfo", "model name", ':');
    return model.empty() ? "unknown" : model;
}

std::int64_t host_memory_bytes() {
    const auto kb = field_of("/proc/meminfo", "MemTotal", ':');
    std::uint64_t n = 0;
    if (!parse_uint(split(kb, ' ').front(), n))
        return 0;
    return static_cast<std::int64_t>(n) * 1024;
}

std::int64_t host_llc_bytes() {
    std::int64_t best = 0;
    for (int i = 0; i < 8; ++i) {
        const auto size = parse_cache_size(read_first_line(
            "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/size"));
        if (size > best)
            best = size;
    }
    return best > 0 ? best : 32ll << 20;
}

json host_fingerprint() {
    utsname u{};
    uname(&u);
    const auto os = field_of("/etc/os-release", "PRETTY_NAME", '=');
    std::string os_name = os;
    if (os_name.size() >= 2 && os_name.front() == '"')
        os_name = os_name.substr(1, os_name.size() - 2);
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return json{{"cpu_model", host_cpu_model()},
                {"logical_cores", std::thread::hardware_concurrency()},
                {"llc_bytes", host_llc_bytes()},
                {"memory_bytes", host_memory_bytes()},
                {"os", os_name.empty() ? std::string(u.sysname) : os_name},
                {"kernel", std::string(u.sysname) + " " + u.release},
                {"machine", u.machine},
                {"hostname", host}};
}

} // namespace fourfold::backend
