#pragma once
// The four ledgers (DESIGN.md) and the status every record carries.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fourfold {

enum class ledger { throughput, op_time, correctness, memory };
inline constexpr std::array k_all_ledgers{ledger::throughput, ledger::op_time, ledger::correctness,
                                          ledger::memory};

std::string_view to_string(ledger l);
std::optional<ledger> parse_ledger(std::string_view name);
std::string ledger_names();
// The fixed unit of a ledger's headline figure, as stored: "tokens/s", "us", "verdict", "bytes".
std::string_view unit_of(ledger l);

// ok: measured; skipped: not possible on this build/device (with the reason);
// failed: attempted and broke (with the reason).
enum class record_status { ok, skipped, failed };
std::string_view to_string(record_status s);
std::optional<record_status> parse_record_status(std::string_view name);

struct ledger_set {
    std::array<bool, 4> on{};
    static ledger_set all() { return {{true, true, true, true}}; }
    static ledger_set of(std::initializer_list<ledger> ls);
    bool has(ledger l) const { return on[static_cast<std::size_t>(l)]; }
    void add(ledger l) { on[static_cast<std::size_t>(l)] = true; }
    void remove(ledger l) { on[static_cast<std::size_t>(l)] = false; }
    ledger_set intersect(const ledger_set& other) const;
    bool empty() const;
    std::vector<ledger> list() const;
    std::string names() const;
};

} // namespace fourfold
