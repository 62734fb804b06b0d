#include "fourfold/core/record.hpp"
#include "fourfold/store/schema.hpp"

#include <gtest/gtest.h>
#include <set>

using namespace fourfold;

TEST(record, key_is_stable_and_names_every_part_of_the_job) {
    job_id a{"softmax", "stock", "cpu", "fp32", json{{"rows", 1}, {"vocab", 8}}, 1};
    job_id b = a;
    b.seed = 2; // the seed is not part of the identity
    EXPECT_EQ(a.key(), b.key());
    EXPECT_EQ(a.key().size(), 16u);
    for (auto change :
         {+[](job_id& j) { j.variant = "generic"; }, +[](job_id& j) { j.device = "cuda:0"; },
          +[](job_id& j) { j.dtype = "bf16"; }, +[](job_id& j) { j.params["rows"] = 2; }}) {
        job_id c = a;
        change(c);
        EXPECT_NE(a.key(), c.key());
    }
    // parameter order does not matter
    job_id d{"softmax", "stock", "cpu", "fp32", json::parse(R"({"vocab": 8, "rows": 1})"), 1};
    EXPECT_EQ(a.key(), d.key());
}

TEST(record, case_key_pairs_across_variant_device_and_dtype) {
    job_id a{"softmax", "stock", "cpu", "fp32", json{{"rows", 1}}, 1};
    job_id b{"softmax", "generic", "cuda:0", "bf16", json{{"rows", 1}}, 1};
    EXPECT_EQ(a.case_key(), b.case_key());
}

TEST(record, each_ledger_has_its_own_table_unit_and_headline_columns) {
    std::set<std::string> tables, units;
    for (const auto l : k_all_ledgers) {
        tables.insert(std::string(store::table_of(l)));
        units.insert(std::string(unit_of(l)));
        EXPECT_FALSE(store::headline_columns(l).empty());
    }
    EXPECT_EQ(tables.size(), 4u);
    EXPECT_EQ(units.size(), 4u);
    EXPECT_EQ(unit_of(ledger::op_time), "us");
    EXPECT_EQ(unit_of(ledger::throughput), "tokens/s");
}

TEST(record, skipped_and_failed_records_carry_their_reason) {
    job_id j{"softmax", "stock", "cpu", "fp16", json::object(), 1};
    const auto s = record::skipped(ledger::op_time, j, "no fp16 kernel");
    EXPECT_EQ(s.status, record_status::skipped);
    EXPECT_EQ(s.reason, "no fp16 kernel");
    EXPECT_EQ(s.unit, "us");
    EXPECT_EQ(record::failed(ledger::memory, j, "boom").status, record_status::failed);
}
