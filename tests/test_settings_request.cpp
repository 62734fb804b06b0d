// runner/settings_request.hpp: the settings a user gave, as the isolation channel carries them.
#include "fourfold/core/error.hpp"
#include "fourfold/runner/settings_request.hpp"

#include <gtest/gtest.h>

using namespace fourfold;
using namespace fourfold::runner;

TEST(settings_request, every_field_round_trips_through_json_text) {
    settings_request r;
    r.ledgers = "op_time";
    r.timing = "event";
    r.cache = "cold";
    r.min_time_s = "0.1";
    r.timeout_s = "2";
    r.max_rel_stdev = "0.01";
    r.warmup_s = "0.05";
    r.min_samples = "5";
    r.seed = "18446744073709551615";
    r.threads = "2";
    r.suite_timeout_s = 30.5;
    EXPECT_EQ(settings_request_from_json(json::parse(to_json(r).dump())), r);
    EXPECT_EQ(settings_request_from_json(to_json(settings_request{})), settings_request{});
}

TEST(settings_request, absent_and_null_fields_take_the_defaults_and_wrong_types_are_refused) {
    const auto empty = settings_request_from_json(json::object());
    EXPECT_EQ(empty, settings_request{});
    EXPECT_EQ(empty.ledgers, "all");
    EXPECT_EQ(settings_request_from_json(json{{"seed", nullptr}, {"ledgers", nullptr}}),
              settings_request{});
    auto refused = [](const json& j, const std::string& needle) {
        try {
            (void)settings_request_from_json(j);
            ADD_FAILURE() << j.dump() << " was accepted";
        } catch (const bad_input& e) {
            EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
        }
    };
    refused(json::array(), "not a JSON object");
    refused(json("text"), "not a JSON object");
    refused(json{{"threads", 2}}, "'threads' is not text");
    refused(json{{"ledgers", json::array()}}, "'ledgers' is not text");
    refused(json{{"suite_timeout_s", "30"}}, "suite_timeout_s is not a number");
    refused(json{{"suite_timeout_s", nullptr}}, "suite_timeout_s is not a number");
}
