#pragma once
// What a stored run's status means to a reader. A run is marked "running" when it begins and
// closed when it ends; a process that crashed or was killed never closes it. Where the run was
// made on this host, its process id (provenance "pid") tells a live run from a dead one.
#include "fourfold/store/result_store.hpp"

#include <string>

namespace fourfold::store {

struct run_state {
    std::string word; // complete | interrupted | failed | running | ended unfinished | not finished
    std::string why;  // empty for a complete run
};

run_state state_of(const run_row& r);

} // namespace fourfold::store
