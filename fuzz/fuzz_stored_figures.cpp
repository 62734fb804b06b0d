// The JSON a store holds, as export, compare and report read it back: any figures object goes
// through each ledger's reader (and back through its writer) without a crash, an exception other
// than the readers' documented stored_value_error, or a sanitizer report.
#include "fourfold/core/figures.hpp"

#include <cstddef>
#include <cstdint>

namespace {

void read_back(const fourfold::json& j) {
    using namespace fourfold;
    auto copy = j;
    const auto o = op_time_figures::from(j);
    o.write(copy);
    (void)o.timing_text();
    const auto t = throughput_figures::from(j);
    t.write(copy);
    const auto c = correctness_figures::from(j);
    c.write(copy);
    (void)c.pass();
    (void)memory_figures_view::from(j);
    (void)round_trip_figure::from_json(j);
    (void)copy.dump();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace fourfold;
    const auto j = json::parse(reinterpret_cast<const char*>(data),
                               reinterpret_cast<const char*>(data) + size, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return 0;
    try {
        read_back(j);
    } catch (const stored_value_error&) {
        // the readers' documented refusal: a stored value of the wrong type, named
    }
    return 0;
}
