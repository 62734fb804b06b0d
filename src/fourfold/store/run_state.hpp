#pragma once
// What a stored run's status means to a reader. A run is marked "running" when it begins and
// closed when it ends; a process that crashed or was killed never closes it. Where the run was
// made on this host, its process id (provenance "pid") tells a live run from a dead one.
#include "fourfold/store/result_store.hpp"

#include <optional>
#include <string>
#include <vector>

namespace fourfold::store {

struct run_state {
    std::string word; // complete | interrupted | failed | running | ended unfinished | not finished
    std::string why;  // empty for a complete run
};

run_state state_of(const run_row& r);

// One line of `fourfold runs`: a run, what became of it, and how many of the records it
// planned are in the store.
struct run_listing {
    run_row run;
    run_state state;
    std::int64_t records = 0;
    std::optional<std::int64_t> planned; // runs stored before fourfold recorded the plan: none
    std::string build;                   // "8e5809e" or "8e5809e (dirty)"
    json to_json() const;
};
std::vector<run_listing> list_runs(const result_store& store);

} // namespace fourfold::store
