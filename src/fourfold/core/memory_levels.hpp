#pragma once
// The memory ledger's levels as a record stores them (DESIGN.md): one table for every reader of
// memory records (compare, report), so a level's name, figure and "unavailable" key agree.
#include <array>

namespace fourfold {

struct memory_level_field {
    const char* name;            // short: "driver", "reserved", "allocated", "outside"
    const char* label;           // for people: "driver/process", "allocator reserved", ...
    const char* pointer;         // JSON pointer of the peak in the record's figures
    const char* unavailable_key; // key under figures.unavailable when the level cannot be had
};

inline constexpr std::array<memory_level_field, 4> k_memory_levels{{
    {"driver", "driver/process", "/driver_peak_bytes", "driver"},
    {"reserved", "allocator reserved", "/reserved_peak_bytes", "reserved"},
    {"allocated", "allocator allocated", "/allocated_peak_bytes", "allocated"},
    {"outside", "outside allocator", "/outside_allocator_bytes", "outside_allocator"},
}};

} // namespace fourfold
