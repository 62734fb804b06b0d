// The settings a job's process receives over the isolation channel (runner/settings_request.hpp):
// any JSON either is refused with bad_input or reads into a request whose JSON form reads back
// into the same request. Anything else (another exception, a round trip that differs, a
// sanitizer report) is a crash.
#include "fourfold/core/error.hpp"
#include "fourfold/runner/settings_request.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fourfold;
    const auto j = json::parse(reinterpret_cast<const char*>(data),
                               reinterpret_cast<const char*>(data) + size, nullptr, false);
    if (j.is_discarded())
        return 0;
    runner::settings_request r;
    try {
        r = runner::settings_request_from_json(j);
    } catch (const bad_input&) {
        return 0; // the reader's documented refusal
    }
    const auto back = runner::settings_request_from_json(runner::to_json(r));
    if (!(back == r))
        std::abort();
    (void)runner::to_json(r).dump();
    return 0;
}
