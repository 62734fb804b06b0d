#pragma once
// Provenance (DESIGN.md): everything about this build and machine that a figure depends on.
// The runner adds the run's seeds and timing settings before storing it with the run.
#include "fourfold/backend/device.hpp"
#include "fourfold/core/json.hpp"

namespace fourfold::backend {

json libtorch_fingerprint();
// Build, libtorch, host, and the device's fingerprint and capabilities (when one is given).
json collect_provenance(const device* dev);

} // namespace fourfold::backend
