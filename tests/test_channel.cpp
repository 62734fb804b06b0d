// The isolation channel: framed JSON over a pipe. Frames cut anywhere still arrive whole; a
// length over the limit, bytes that are not JSON and JSON that is not an object break the channel
// with a message (never a crash); a record crosses whole, NaN samples included.
#include "fourfold/runner/channel.hpp"
#include "fourfold/runner/isolation.hpp"

#include <cmath>
#include <gtest/gtest.h>
#include <unistd.h>

using namespace fourfold;
using namespace fourfold::runner;

namespace {

record sample_record() {
    job_id id;
    id.workload = "softmax";
    id.variant = "stock";
    id.device = "cpu";
    id.dtype = "fp32";
    id.params = json{{"rows", 1}, {"vocab", 1000}};
    id.seed = 18446744073709551615ull;
    auto r = record::make(ledger::op_time, id);
    r.figures = json{{"stats", {{"median", 1.5}}}, {"mode", "host"}};
    r.samples = {1.0, std::nan(""), 2.5};
    r.samples_unit = "us";
    return r;
}

} // namespace

TEST(channel, frames_cut_at_every_byte_arrive_whole) {
    const auto bytes =
        encode_frame(json{{"t", "step"}, {"pass", "op_time"}}) + encode_frame(json{{"t", "done"}});
    frame_reader reader;
    std::vector<json> got;
    for (const char c : bytes) {
        reader.feed(std::string_view(&c, 1));
        while (auto f = reader.next())
            got.push_back(*f);
    }
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].value("pass", ""), "op_time");
    EXPECT_EQ(got[1].value("t", ""), "done");
    EXPECT_TRUE(reader.error().empty());
    EXPECT_EQ(reader.pending(), 0u);
}

TEST(channel, a_partial_frame_waits_and_is_pending) {
    const auto bytes = encode_frame(json{{"t", "record"}});
    frame_reader reader;
    reader.feed(std::string_view(bytes).substr(0, bytes.size() - 1));
    EXPECT_FALSE(reader.next());
    EXPECT_EQ(reader.pending(), bytes.size() - 1);
    EXPECT_TRUE(reader.error().empty());
}

TEST(channel, an_oversized_length_breaks_the_channel) {
    frame_reader reader;
    const std::string huge("\xff\xff\xff\xff{}", 6);
    reader.feed(huge);
    EXPECT_FALSE(reader.next());
    EXPECT_NE(reader.error().find("over the limit"), std::string::npos) << reader.error();
    reader.feed(encode_frame(json{{"t", "done"}}));
    EXPECT_FALSE(reader.next()) << "a broken channel stays broken";
}

TEST(channel, bytes_that_are_not_a_json_object_break_it) {
    for (const std::string body : {"not json", "[1,2]", "42", "\"text\""}) {
        std::string frame;
        for (int i = 0; i < 4; ++i)
            frame += static_cast<char>((body.size() >> (8 * i)) & 0xff);
        frame += body;
        frame_reader reader;
        reader.feed(frame);
        EXPECT_FALSE(reader.next()) << body;
        EXPECT_NE(reader.error().find("not a JSON object"), std::string::npos) << body;
    }
}

TEST(channel, a_record_crosses_whole) {
    const auto r = sample_record();
    frame_reader reader;
    reader.feed(encode_frame(json{{"r", record_to_json(r)}}));
    const auto f = reader.next();
    ASSERT_TRUE(f);
    const auto back = record_from_json(f->at("r"));
    EXPECT_EQ(back.job.key(), r.job.key());
    EXPECT_EQ(back.job.seed, r.job.seed);
    EXPECT_EQ(back.which, ledger::op_time);
    EXPECT_EQ(back.status, record_status::ok);
    EXPECT_EQ(back.figures, r.figures);
    ASSERT_EQ(back.samples.size(), 3u);
    EXPECT_EQ(back.samples[0], 1.0);
    EXPECT_TRUE(std::isnan(back.samples[1]));
    EXPECT_EQ(back.samples_unit, "us");
}

TEST(channel, a_record_missing_a_field_is_refused_by_name) {
    auto j = record_to_json(sample_record());
    j.erase("status");
    try {
        (void)record_from_json(j);
        FAIL() << "a record without a status was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("status"), std::string::npos) << e.what();
    }
    auto k = record_to_json(sample_record());
    k["ledger"] = "speed";
    EXPECT_THROW((void)record_from_json(k), std::invalid_argument);
}

TEST(channel, frames_cross_a_real_pipe) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    ASSERT_TRUE(write_frame(fds[1], json{{"t", "ready"}}));
    close(fds[1]);
    char buffer[256];
    const auto n = read(fds[0], buffer, sizeof buffer);
    close(fds[0]);
    ASSERT_GT(n, 0);
    frame_reader reader;
    reader.feed(std::string_view(buffer, static_cast<std::size_t>(n)));
    const auto f = reader.next();
    ASSERT_TRUE(f);
    EXPECT_EQ(f->value("t", ""), "ready");
}

TEST(channel, a_settings_request_round_trips) {
    settings_request r;
    r.ledgers = "op_time,memory";
    r.timeout_s = "0.3";
    r.seed = "7";
    r.suite_timeout_s = 12;
    const auto back = settings_request_from_json(to_json(r));
    EXPECT_EQ(back.ledgers, "op_time,memory");
    EXPECT_EQ(back.timeout_s, std::optional<std::string>("0.3"));
    EXPECT_EQ(back.seed, std::optional<std::string>("7"));
    EXPECT_FALSE(back.timing);
    EXPECT_EQ(back.suite_timeout_s, 12);
    EXPECT_THROW((void)settings_request_from_json(json{{"timing", 5}}), bad_input);
}
