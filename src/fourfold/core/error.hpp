#pragma once
// Errors that cross layers. The CLI converts each kind into its exit code (DESIGN.md):
// 0 ok, 1 correctness FAIL or regression, 2 bad input or usage, 3 device or internal error.
#include <stdexcept>
#include <string>

namespace fourfold {

enum class exit_code : int { ok = 0, check_failed = 1, bad_input = 2, internal = 3 };

// Something the user gave that cannot be used: the message names the value and what would be valid.
class bad_input : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A device or the runtime under it failed in a way no input could have prevented.
class device_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

} // namespace fourfold
