// model_config.hpp's config.json reader on inputs the fuzz target (fuzz/fuzz_model_config.cpp)
// reaches: what it found stays a unit test here. (The reader's other tests are in
// test_decoder.cpp, beside the decoder they configure.)
#include "fourfold/core/error.hpp"
#include "fourfold/workloads/models/model_config.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::workloads::models;

namespace {

json llama31(const json& original) {
    auto j = find_preset("tiny-llama")->to_hf_config();
    j["rope_scaling"] = json{{"rope_type", "llama3"},
                             {"factor", 8.0},
                             {"low_freq_factor", 1.0},
                             {"high_freq_factor", 4.0},
                             {"original_max_position_embeddings", original}};
    return j;
}

} // namespace

// fuzz_model_config (UBSan): 1e30 was converted to int64, undefined behaviour; a value outside
// 1..2^24 or not whole is now bad_input naming the field. Input:
// fuzz/corpus/model_config/regression_rope_original_huge.json.
TEST(model_config, llama3_rope_original_positions_out_of_range_are_bad_input) {
    EXPECT_EQ(parse_hf_config(llama31(8192), "cfg").rope.original_max_positions, 8192);
    EXPECT_EQ(parse_hf_config(llama31(8192.0), "cfg").rope.original_max_positions, 8192);
    EXPECT_EQ(parse_hf_config(llama31(1 << 24), "cfg").rope.original_max_positions, 1 << 24);
    for (const auto& bad : {json(1e30), json(-1e30), json(0), json(-5), json(8192.5),
                            json((1 << 24) + 1), json(1e300)}) {
        try {
            (void)parse_hf_config(llama31(bad), "cfg");
            ADD_FAILURE() << bad.dump() << " was accepted";
        } catch (const bad_input& e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("cfg: original_max_position_embeddings"), std::string::npos) << msg;
            EXPECT_NE(msg.find("1..16777216"), std::string::npos) << msg;
        }
    }
    // a round trip keeps what was accepted
    const auto c = parse_hf_config(llama31(8192), "cfg");
    EXPECT_EQ(parse_hf_config(c.to_hf_config(), "cfg"), c);
}
