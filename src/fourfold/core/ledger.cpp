#include "fourfold/core/ledger.hpp"

#include "fourfold/core/text.hpp"

namespace fourfold {

std::string_view to_string(ledger l) {
    switch (l) {
    case ledger::throughput:
        return "throughput";
    case ledger::op_time:
        return "op_time";
    case ledger::correctness:
        return "correctness";
    case ledger::memory:
        return "memory";
    }
    return "?";
}

std::optional<ledger> parse_ledger(std::string_view name) {
    for (const auto l : k_all_ledgers)
        if (to_string(l) == name)
            return l;
    return std::nullopt;
}

std::string ledger_names() {
    std::vector<std::string> names;
    names.reserve(k_all_ledgers.size());
    for (const auto l : k_all_ledgers)
        names.emplace_back(to_string(l));
    return join(names, ", ");
}

std::string_view unit_of(ledger l) {
    switch (l) {
    case ledger::throughput:
        return "tokens/s";
    case ledger::op_time:
        return "us";
    case ledger::correctness:
        return "verdict";
    case ledger::memory:
        return "bytes";
    }
    return "?";
}

std::string_view to_string(record_status s) {
    switch (s) {
    case record_status::ok:
        return "ok";
    case record_status::skipped:
        return "skipped";
    case record_status::failed:
        return "failed";
    }
    return "?";
}

std::optional<record_status> parse_record_status(std::string_view name) {
    for (const auto s : {record_status::ok, record_status::skipped, record_status::failed})
        if (to_string(s) == name)
            return s;
    return std::nullopt;
}

ledger_set ledger_set::of(std::initializer_list<ledger> ls) {
    ledger_set s;
    for (const auto l : ls)
        s.add(l);
    return s;
}

ledger_set ledger_set::intersect(const ledger_set& other) const {
    ledger_set s;
    for (std::size_t i = 0; i < on.size(); ++i)
        s.on[i] = on[i] && other.on[i];
    return s;
}

bool ledger_set::empty() const {
    for (const bool b : on)
        if (b)
            return false;
    return true;
}

std::vector<ledger> ledger_set::list() const {
    std::vector<ledger> out;
    for (const auto l : k_all_ledgers)
        if (has(l))
            out.push_back(l);
    return out;
}

std::string ledger_set::names() const {
    std::vector<std::string> names;
    for (const auto l : list())
        names.emplace_back(to_string(l));
    return join(names, ",");
}

} // namespace fourfold
