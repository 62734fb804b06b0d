#pragma once
// The host machine for provenance: CPU model, cores, caches, memory, OS, kernel.
#include "fourfold/core/json.hpp"

#include <cstdint>

namespace fourfold::backend {

json host_fingerprint();
std::int64_t host_memory_bytes();
// Last-level cache of CPU 0 in bytes (sysfs), or a conservative 32 MiB when unreadable.
std::int64_t host_llc_bytes();
std::string host_cpu_model();

} // namespace fourfold::backend
