// runner/plan_grammar.hpp: the request grammar without the workload registry (what plan.cpp
// calls with each workload's rules, and what fuzz_plan_grammar feeds arbitrary text).
#include "fourfold/core/error.hpp"
#include "fourfold/runner/plan_grammar.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::runner;

namespace {

// softmax's parameters and shape, plus a boolean and a text of two choices
request_grammar grammar() {
    request_grammar g;
    g.workload = "toy";
    g.params = {{"rows", value_kind::integer, 1, 1 << 20, {}},
                {"vocab", value_kind::integer, 1, std::int64_t{1} << 31, {}},
                {"pad", value_kind::integer, 0, 64, {}},
                {"bias", value_kind::boolean, 1, 1, {}},
                {"mode", value_kind::text, 1, 1, {"eager", "graph"}},
                {"model", value_kind::text, 1, 1, {}}};
    g.shape_params = {"rows", "vocab"};
    return g;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const bad_input& e) {
        return e.what();
    }
    return "no error";
}

bool has(const std::string& text, const std::string& needle) {
    return text.find(needle) != std::string::npos;
}

} // namespace

TEST(plan_grammar, a_shape_fills_the_shape_parameters_in_order) {
    const auto g = grammar();
    EXPECT_EQ(parse_shape(g, "1x128256"), (json{{"rows", 1}, {"vocab", 128256}}));
    EXPECT_EQ(parse_shape(g, " 8 x 2147483648 "), (json{{"rows", 8}, {"vocab", 2147483648}}));
    EXPECT_TRUE(has(error_of([&] { parse_shape(g, "1x0"); }), "dimension 2 (vocab) is 0"));
    EXPECT_TRUE(has(error_of([&] { parse_shape(g, "1"); }), "takes 2 (rowsxvocab)"));
    EXPECT_TRUE(has(error_of([&] { parse_shape(g, "1x2x3"); }), "has 3 dimension(s)"));
    EXPECT_TRUE(has(error_of([&] { parse_shape(g, "1x-5"); }), "'-5' is not a positive"));
    EXPECT_TRUE(has(error_of([&] { parse_shape(g, "1x"); }), "'' is not a positive"));
    EXPECT_TRUE(has(error_of([&] { parse_shape(g, "1048577x1"); }), "above the largest"));
    EXPECT_TRUE(
        has(error_of([&] { parse_shape(g, "1x99999999999999999999999"); }), "not a positive"));
    auto none = g;
    none.shape_params.clear();
    EXPECT_TRUE(has(error_of([&] { parse_shape(none, "1x2"); }), "takes no --shape; use --param "
                                                                 "(rows, vocab, pad, bias, mode, "
                                                                 "model)"));
}

TEST(plan_grammar, values_are_lists_and_ascending_ranges_inside_the_bounds) {
    const auto g = grammar();
    const auto& rows = *g.find("rows");
    EXPECT_EQ(parse_values(g, rows, "1, 8,64"), (std::vector<json>{1, 8, 64}));
    EXPECT_EQ(parse_values(g, rows, "2..4,9"), (std::vector<json>{2, 3, 4, 9}));
    EXPECT_EQ(parse_values(g, *g.find("pad"), "0"), (std::vector<json>{0}));
    EXPECT_EQ(parse_values(g, rows, "1..4097").size(), 4097u);
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, "1..4098"); }), "at most 4097"));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, "4..2"); }), "must be ascending"));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, "0"); }), "out of range for toy"));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, "1..x"); }), "rows=x is not a whole"));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, "1...3"); }), "not a whole number"));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, "1,,2"); }), "rows=1,,2 has an empty"));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, rows, ""); }), "empty item"));
    const auto& bias = *g.find("bias");
    EXPECT_EQ(parse_values(g, bias, "true,off,1,no"),
              (std::vector<json>{true, false, true, false}));
    EXPECT_TRUE(has(error_of([&] { parse_values(g, bias, "maybe"); }), "valid: true, false"));
    EXPECT_EQ(parse_values(g, *g.find("mode"), "graph"), (std::vector<json>{"graph"}));
    EXPECT_TRUE(
        has(error_of([&] { parse_values(g, *g.find("mode"), "lazy"); }), "valid: eager, graph"));
    EXPECT_EQ(parse_values(g, *g.find("model"), "any text"), (std::vector<json>{"any text"}));
}

TEST(plan_grammar, a_suites_value_is_checked_like_its_text_and_is_one_value) {
    const auto g = grammar();
    EXPECT_EQ(checked_value(g, *g.find("rows"), json(8)), json(8));
    EXPECT_EQ(checked_value(g, *g.find("rows"), json("8")), json(8));
    EXPECT_EQ(checked_value(g, *g.find("bias"), json(true)), json(true));
    EXPECT_TRUE(
        has(error_of([&] { checked_value(g, *g.find("rows"), json("1..3")); }), "needs one value"));
    EXPECT_TRUE(
        has(error_of([&] { checked_value(g, *g.find("rows"), json(1.5)); }), "not a whole number"));
    EXPECT_TRUE(
        has(error_of([&] { checked_value(g, *g.find("rows"), json(-1)); }), "not a whole number"));
}

TEST(plan_grammar, a_param_is_name_equals_value_with_a_known_name) {
    const auto g = grammar();
    const auto a = split_param(g, " rows =1..3");
    EXPECT_EQ(a.name, "rows");
    EXPECT_EQ(a.rule, g.find("rows"));
    EXPECT_EQ(a.value, "1..3");
    EXPECT_EQ(split_param(g, "model=a=b").value, "a=b");
    EXPECT_TRUE(has(error_of([&] { split_param(g, "rows"); }), "is not NAME=VALUE; toy takes: "
                                                               "rows, vocab"));
    EXPECT_TRUE(has(error_of([&] { split_param(g, "=1"); }), "not NAME=VALUE"));
    EXPECT_TRUE(has(error_of([&] { split_param(g, "cols=1"); }), "parameter 'cols' is unknown"));
}

TEST(plan_grammar, ledgers_threads_and_lists) {
    EXPECT_EQ(parse_ledgers(" all ").list().size(), 4u);
    EXPECT_TRUE(parse_ledgers("memory, op_time").has(ledger::op_time));
    EXPECT_TRUE(has(error_of([] { parse_ledgers("speed"); }), "ledger 'speed' is unknown"));
    EXPECT_TRUE(has(error_of([] { parse_ledgers(""); }), "empty item"));
    EXPECT_EQ(parse_threads("1"), 1);
    EXPECT_EQ(parse_threads("4096"), k_max_threads);
    for (const auto* bad : {"0", "4097", "-1", "x", "", "99999999999999999999"})
        EXPECT_TRUE(has(error_of([&] { parse_threads(bad); }), "valid: 1..4096")) << bad;
    EXPECT_EQ(split_list(" a, b ", "x"), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(has(error_of([] { split_list("a,", "--dtype 'a,'"); }), "--dtype 'a,' has an"));
}
