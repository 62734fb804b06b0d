#pragma once
// Errors that cross layers. The CLI converts each kind into its exit code (DESIGN.md):
// 0 ok, 1 correctness FAIL or regression, 2 bad input or usage, 3 device, internal or write
// error, 4 a run that measured nothing (every job skipped, each record says why).
#include <stdexcept>
#include <string>

namespace fourfold {

enum class exit_code : int {
    ok = 0,
    check_failed = 1,
    bad_input = 2,
    internal = 3,
    nothing_measured = 4
};

// Something the user gave that cannot be used: the message names the value and what would be valid.
class bad_input : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A valid request this build or device cannot do, found only once it runs (graph capture on a
// device without graphs, a libtorch without an op): a `skipped` record with this reason, not an
// error. Thrown only by fourfold's own code, which knows the cause; an exception from libtorch
// is never turned into a skip by reading its text.
class unsupported_here : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// A device or the runtime under it failed in a way no input could have prevented.
class device_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

// Writing an output failed after it began (a full disk, an I/O error): the message carries the
// errno text; no partial file is left (core/files.hpp, write_file_atomically).
class write_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

} // namespace fourfold
