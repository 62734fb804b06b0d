// The article suite on the CPU, end to end through the real binary (ctest labels cpu;slow): it
// finishes, nothing fails, every skipped record says why, reduced jobs say they are reduced, and
// the output holds one table per workload and the geometric-mean lines.
#include "fourfold/core/json.hpp"
#include "test_helpers.hpp"

#include <chrono>
#include <cstdlib>
#include <gtest/gtest.h>
#include <map>
#include <set>

using fourfold::json;
using fourfold::testing::run_cli;
using fourfold::testing::temp_dir;

namespace {} // namespace

TEST(article_suite, runs_on_the_cpu_with_no_failures_and_reasons_for_every_skip) {
    temp_dir dir;
    const auto db = (dir / "a.db");
    const auto t0 = std::chrono::steady_clock::now();
    const auto r =
        run_cli("run --suite article --device cpu --label article-cpu --quiet --db " + db, dir);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << "article suite on the CPU: " << seconds << " s\n";
    ASSERT_EQ(r.code, 0) << r.err << r.out;

    for (const char* w : {"linear_decode", "softmax", "moe_decode", "pad", "fp8_linear"})
        EXPECT_NE(r.out.find(std::string(w) + " - op_time: microseconds per call"),
                  std::string::npos)
            << w;
    EXPECT_NE(r.out.find("decode - throughput: tokens/s"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("median [µs]"), std::string::npos);
    EXPECT_NE(r.out.find("speed-up of stock over generic"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("linear_decode bf16 cpu: all:"), std::string::npos) << r.out;

    const auto e = run_cli("export --format json --run article-cpu --db " + db, dir);
    ASSERT_EQ(e.code, 0) << e.err;
    const auto doc = json::parse(e.out);
    std::map<std::string, std::set<std::string>> ledgers_of;
    std::size_t ok = 0, skipped = 0, reduced = 0;
    for (const auto& rec : doc["records"]) {
        const auto what =
            rec["workload"].get<std::string>() + " " + rec["variant"].get<std::string>();
        EXPECT_NE(rec["status"], "failed") << what << ": " << rec.value("reason", "");
        if (rec["status"] == "skipped") {
            EXPECT_FALSE(rec.value("reason", "").empty()) << what;
            ++skipped;
            continue;
        }
        ++ok;
        ledgers_of[rec["workload"].get<std::string>()].insert(rec["ledger"].get<std::string>());
        const auto& f = rec["figures"];
        if (rec["ledger"] == "correctness") {
            EXPECT_EQ(f["verdict"], "PASS") << what;
        }
        if (f.contains("job_note") &&
            f["job_note"].get<std::string>().find("reduced for the CPU") != std::string::npos)
            ++reduced;
    }
    for (const char* w : {"linear_decode", "softmax", "moe_decode", "pad", "fp8_linear"})
        EXPECT_EQ(ledgers_of[w], (std::set<std::string>{"correctness", "memory", "op_time"})) << w;
    // the default --ledgers (all) gives the whole-model decode its own ledger: tokens/s
    EXPECT_EQ(ledgers_of["decode"], (std::set<std::string>{"correctness", "memory", "throughput"}));
    // E5 and E6: the tiled VAE decode in frames/s, the round trip timed per call
    EXPECT_EQ(ledgers_of["vae_decode"],
              (std::set<std::string>{"correctness", "memory", "throughput"}));
    EXPECT_EQ(ledgers_of["vae_roundtrip"],
              (std::set<std::string>{"correctness", "memory", "op_time"}));
    EXPECT_NE(r.out.find("vae_decode - throughput: frames/s"), std::string::npos) << r.out;
    EXPECT_GT(ok, 100u);
    EXPECT_GT(skipped, 0u); // at least moe stock on a CPU without _grouped_mm, or _scaled_mm
    EXPECT_GT(reduced, 0u);
}
