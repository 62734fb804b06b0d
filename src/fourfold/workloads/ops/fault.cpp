// Test-only: a workload whose "stock" variant faults on purpose, for the isolation tests (a
// segfault, an abort, a hang, an allocation larger than the machine; on a CUDA device an
// out-of-bounds native kernel and a cudaMalloc larger than the card). Its "generic" variant is a
// plain copy, so that a faulting job sits beside a normal one in the same group, and fault=none
// makes a whole group of normal jobs.
//
// It is registered only when the environment holds FOURFOLD_TEST_FAULTS=1 (the tests set it for
// the binary they run; a job's process inherits it), so `fourfold list` and every suite never
// offer it, and a user's run cannot name it by accident.
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fmt/format.h>
#include <fstream>
#include <string>
#include <sys/mman.h>
#include <unistd.h>
#if FOURFOLD_WITH_KERNELS
#include "fourfold/kernels/fault.hpp"
#include "fourfold/workloads/native.hpp"
#endif

namespace fourfold::workloads {
namespace {

bool faults_enabled() {
    const char* v = std::getenv("FOURFOLD_TEST_FAULTS");
    return v && std::string(v) == "1";
}

// MemAvailable of /proc/meminfo in bytes; 0 where it cannot be read.
std::int64_t available_host_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string key;
    std::int64_t kib = 0;
    std::string unit;
    while (in >> key >> kib >> unit)
        if (key == "MemAvailable:")
            return kib * 1024;
    return 0;
}

// 2^47 bytes (128 TiB): more than any machine's memory and than a 47-bit user address space,
// so the allocation fails whatever the kernel's overcommit policy is, and nothing is touched.
constexpr std::int64_t k_huge_bytes = std::int64_t{1} << 47;

class fault_case final : public workload_case {
  public:
    explicit fault_case(const case_args& a)
        : workload_case(a), m_fault(a.get_text("fault")), m_size(a.get_int("size")) {}

    cost declared_cost() const override {
        const double b = 4.0 * static_cast<double>(m_size);
        return {b, b, 0, "a copy: read once, write once"};
    }
    input_set make_inputs(std::uint64_t seed) const override {
        return input_set().add("x",
                               seeded_normal({m_size}, sub_seed(seed, 0), 0.0, 1.0, at::kFloat));
    }
    reference_plan reference(const input_set& in) const override {
        const auto& x = in["x"];
        return chunked_reference(0, m_size, 8, "the input in float64 (a copy)",
                                 [x](std::int64_t start, std::int64_t length) {
                                     return x.narrow(0, start, length).to(at::kDouble);
                                 });
    }

    at::Tensor copy(const call_context&, const input_set& in) const { return in["x"].clone(); }

    at::Tensor faulting(const call_context& ctx, const input_set& in) const {
        if (m_fault == "none")
            return in["x"].clone();
        if (m_fault == "segfault") {
            // a real access fault: a write to a page mapped without any access
            void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            *static_cast<volatile int*>(page) = 1;
            return in["x"].clone();
        }
        if (m_fault == "abort")
            std::abort();
        if (m_fault == "hang" || m_fault == "hang_hard") {
            if (m_fault == "hang_hard")
                std::signal(SIGTERM, SIG_IGN); // only SIGKILL ends it
            for (;;)
                pause();
        }
        if (m_fault == "huge_alloc") {
            const auto free_bytes = available_host_bytes();
            try {
                return at::empty({k_huge_bytes / 4}, in["x"].options());
            } catch (const c10::Error& e) {
                throw device_error(
                    fmt::format("out of memory: requested {} bytes on {}, {} bytes free there ({})",
                                k_huge_bytes, ctx.device().name(),
                                ctx.device().spec().kind == backend::device_kind::cpu
                                    ? std::to_string(free_bytes)
                                    : std::string("see libtorch's message"),
                                first_line(e.what_without_backtrace())));
            }
        }
        return gpu_fault(ctx, in);
    }

  private:
    static std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

    at::Tensor gpu_fault(const call_context& ctx, const input_set& in) const {
#if FOURFOLD_WITH_KERNELS
        if (ctx.device().spec().kind == backend::device_kind::cuda) {
            const auto& x = in["x"];
            if (m_fault == "cuda_illegal_address") {
                auto y = x.clone();
                // 2^36 floats (256 GiB) past the buffer: no allocation reaches there
                native::check(kernels::launch_out_of_bounds_write(y.data_ptr<float>(),
                                                                  std::int64_t{1} << 36, 1.0f,
                                                                  native::stream(ctx)),
                              "out_of_bounds_write");
                return y;
            }
            if (m_fault == "cuda_oom") {
                const auto before = kernels::try_device_malloc(0);
                const auto bytes = before.total_bytes + (std::size_t{1} << 30);
                const auto p = kernels::try_device_malloc(bytes);
                if (!p.status.ok())
                    throw device_error(fmt::format(
                        "out of memory: cudaMalloc of {} bytes on {} failed ({}); {} bytes free of "
                        "{}",
                        bytes, ctx.device().name(), p.status.message, p.free_bytes, p.total_bytes));
                return x.clone();
            }
        }
#endif
        (void)in;
        throw unsupported_here(fmt::format("fault {} needs a CUDA device and fourfold's kernels "
                                           "(device {})",
                                           m_fault, ctx.device().name()));
    }

    std::string m_fault;
    std::int64_t m_size;
};

[[maybe_unused]] const bool k_registered = [] {
    if (!faults_enabled())
        return false;
    workload_builder<fault_case>("fault")
        .describe("TEST ONLY (FOURFOLD_TEST_FAULTS=1): stock faults on purpose, generic copies")
        .shape({"size"})
        .param_text("fault", "none",
                    {"none", "segfault", "abort", "hang", "hang_hard", "huge_alloc",
                     "cuda_illegal_address", "cuda_oom"},
                    "how stock fails")
        .param_int("size", 1024, "elements copied", 1, 1 << 24)
        .dtypes({dtype::fp32})
        .variant("generic", &fault_case::copy, "a plain copy (a normal job beside the fault)")
        .variant("stock", &fault_case::faulting, "the fault named by the parameter");
    return true;
}();

} // namespace
} // namespace fourfold::workloads
