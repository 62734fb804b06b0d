#include "fourfold/runner/channel.hpp"

#include <cerrno>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <unistd.h>

namespace fourfold::runner {

std::string encode_frame(const json& message) {
    const auto body = message.dump(-1, ' ', false, json::error_handler_t::replace);
    if (body.size() > k_max_frame_bytes)
        throw std::length_error(fmt::format("a channel frame of {} bytes is over the limit of {}",
                                            body.size(), k_max_frame_bytes));
    const auto n = static_cast<std::uint32_t>(body.size());
    std::string out;
    out.reserve(4 + body.size());
    for (int i = 0; i < 4; ++i)
        out += static_cast<char>((n >> (8 * i)) & 0xff);
    out += body;
    return out;
}

bool write_frame(int fd, const json& message) {
    const auto bytes = encode_frame(message);
    std::size_t done = 0;
    while (done < bytes.size()) {
        const auto n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void frame_reader::feed(std::string_view bytes) {
    if (!m_error.empty())
        return;
    // drop what was consumed before the buffer grows again
    if (m_at > 0 && m_at == m_buffer.size()) {
        m_buffer.clear();
        m_at = 0;
    } else if (m_at > (1u << 20)) {
        m_buffer.erase(0, m_at);
        m_at = 0;
    }
    m_buffer.append(bytes);
}

std::optional<json> frame_reader::next() {
    if (!m_error.empty() || pending() < 4)
        return std::nullopt;
    std::uint32_t n = 0;
    for (int i = 0; i < 4; ++i)
        n |= static_cast<std::uint32_t>(static_cast<unsigned char>(m_buffer[m_at + i])) << (8 * i);
    if (n > k_max_frame_bytes) {
        m_error =
            fmt::format("a frame announces {} bytes, over the limit of {}", n, k_max_frame_bytes);
        return std::nullopt;
    }
    if (pending() < 4 + static_cast<std::size_t>(n))
        return std::nullopt;
    const std::string_view body(m_buffer.data() + m_at + 4, n);
    m_at += 4 + n;
    auto value = json::parse(body, nullptr, false);
    if (value.is_discarded() || !value.is_object()) {
        m_error = fmt::format("a frame of {} bytes is not a JSON object", n);
        return std::nullopt;
    }
    return value;
}

json record_to_json(const record& r) {
    json j{{"ledger", std::string(to_string(r.which))},
           {"job", r.job.to_json()},
           {"seed", r.job.seed},
           {"status", std::string(to_string(r.status))},
           {"reason", r.reason},
           {"unit", r.unit},
           {"figures", r.figures},
           {"samples", r.samples},
           {"samples_unit", r.samples_unit}};
    return j;
}

namespace {

const json& field(const json& j, const char* name, json::value_t type) {
    const auto it = j.find(name);
    if (it == j.end())
        throw std::invalid_argument(fmt::format("a record without '{}'", name));
    const bool ok = type == json::value_t::number_float ? it->is_number() : it->type() == type;
    if (!ok)
        throw std::invalid_argument(fmt::format("a record whose '{}' has the wrong type", name));
    return *it;
}

std::string text(const json& j, const char* name) {
    return field(j, name, json::value_t::string).get<std::string>();
}

} // namespace

record record_from_json(const json& j) {
    if (!j.is_object())
        throw std::invalid_argument("a record that is not a JSON object");
    record r;
    const auto l = parse_ledger(text(j, "ledger"));
    if (!l)
        throw std::invalid_argument("a record of an unknown ledger");
    r.which = *l;
    const auto s = parse_record_status(text(j, "status"));
    if (!s)
        throw std::invalid_argument("a record of an unknown status");
    r.status = *s;
    const auto& job = field(j, "job", json::value_t::object);
    r.job.workload = text(job, "workload");
    r.job.variant = text(job, "variant");
    r.job.device = text(job, "device");
    r.job.dtype = text(job, "dtype");
    r.job.params = field(job, "params", json::value_t::object);
    const auto& seed = j.find("seed");
    if (seed == j.end() || !seed->is_number_unsigned())
        throw std::invalid_argument("a record without an unsigned 'seed'");
    r.job.seed = seed->get<std::uint64_t>();
    r.reason = text(j, "reason");
    r.unit = text(j, "unit");
    r.figures = field(j, "figures", json::value_t::object);
    for (const auto& v : field(j, "samples", json::value_t::array)) {
        if (v.is_null()) { // a NaN sample: JSON has no NaN, and dump() writes null
            r.samples.push_back(std::numeric_limits<double>::quiet_NaN());
            continue;
        }
        if (!v.is_number())
            throw std::invalid_argument("a record whose samples are not all numbers");
        r.samples.push_back(v.get<double>());
    }
    r.samples_unit = text(j, "samples_unit");
    return r;
}

} // namespace fourfold::runner
