// softmax over the last dimension of (rows x vocab) logits: the sampling step of every decode.
// Experiment E4 of REFERENCE_EXPERIMENTS.md (one FP32 row of 128,256).
#include "fourfold/workloads/model_ops/softmax.hpp"

#include "fourfold/backend/dtype_map.hpp"
#include "fourfold/workloads/inputs.hpp"
#include "fourfold/workloads/workload.hpp"

#include <ATen/ATen.h>

namespace fourfold::workloads {
namespace {

class softmax_case final : public workload_case {
  public:
    explicit softmax_case(const case_args& a)
        : workload_case(a), m_rows(a.get_int("rows")), m_vocab(a.get_int("vocab")) {}

    cost declared_cost() const override {
        const double n = static_cast<double>(m_rows) * static_cast<double>(m_vocab);
        const double bytes = n * static_cast<double>(size_bytes(args().type));
        return {bytes, bytes, 5.0 * n,
                "read logits once, write probabilities once; 5 FLOP per "
                "element (max, subtract, exp, sum, divide)"};
    }

    input_set make_inputs(std::uint64_t seed) const override {
        // logits with the spread of a real LM head (standard deviation 2)
        return input_set().add("logits",
                               seeded_normal({m_rows, m_vocab}, sub_seed(seed, 0), 0.0, 2.0,
                                             backend::scalar_type_or_throw(args().type)));
    }

    reference_plan reference(const input_set& in) const override {
        const auto& x = in["logits"];
        return chunked_reference(0, m_rows, 3 * m_vocab * 8, "softmax in float64 on the CPU",
                                 [x](std::int64_t start, std::int64_t length) {
                                     return at::softmax(x.narrow(0, start, length).to(at::kDouble),
                                                        -1);
                                 });
    }

    // The three paths of model_ops::softmax, the function the decoder samples and routes with.
    at::Tensor stock(const call_context& ctx, const input_set& in) const {
        return model_ops::softmax(in["logits"], model_ops::op_path::stock, &ctx);
    }

    // The composite a graph compiler emits: max, subtract, exp, sum, divide - five launches and
    // three intermediates, in the input dtype.
    at::Tensor generic(const call_context& ctx, const input_set& in) const {
        return model_ops::softmax(in["logits"], model_ops::op_path::composite, &ctx);
    }

    // fourfold's kernel (kernels/softmax.cu): one launch, the row read once and written once.
    at::Tensor native(const call_context& ctx, const input_set& in) const {
        return model_ops::softmax(in["logits"], model_ops::op_path::native, &ctx);
    }

  private:
    std::int64_t m_rows;
    std::int64_t m_vocab;
};

FOURFOLD_WORKLOAD(softmax_case, "softmax")
    .describe("softmax over the last dimension of rows x vocab logits")
    .shape({"rows", "vocab"})
    .param_int("rows", 1, "rows of logits (tokens)", 1, 1 << 20)
    .param_int("vocab", 128256, "vocabulary size (columns)", 1, std::int64_t{1} << 31)
    .dtypes({dtype::fp32, dtype::bf16, dtype::fp16})
    .variant("stock", &softmax_case::stock, "at::softmax (the library's kernel)", false,
             {.ops = {"softmax"}})
    .variant("generic", &softmax_case::generic,
             "max, subtract, exp, sum, divide as separate ops (a composite path)", false,
             {.ops = {"max", "exp", "sum"}})
    .native_variant("native", &softmax_case::native,
                    "fourfold's CUDA kernel: one launch, a row spread over a thread-block "
                    "cluster, read once and written once");

} // namespace
} // namespace fourfold::workloads
