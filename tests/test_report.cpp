// report: HTML escaping, the self-contained page (no script, nothing fetched), a chart for
// every ledger that has data with its unit and baseline, and the Markdown and CSV views of the
// same figures; the compare tables; the progress line.
#include "compare_fixtures.hpp"
#include "fourfold/report/compare_tables.hpp"
#include "fourfold/report/html.hpp"
#include "fourfold/report/progress_line.hpp"
#include "fourfold/report/report.hpp"
#include "fourfold/report/text_table.hpp"
#include "test_helpers.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <sstream>

using namespace fourfold;
using namespace fourfold::testing;

namespace {

const char* k_evil = "<script>alert(1)</script>";

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
        ++n;
    return n;
}

// Two runs with every ledger, the second labelled with markup.
struct two_runs {
    temp_dir dir;
    store::result_store s = store::result_store::open(dir / "r.db", store::open_mode::read_write);
    two_runs() {
        for (int run = 0; run < 2; ++run) {
            std::vector<record> recs;
            for (const char* v : {"stock", "generic"}) {
                for (int n : {256, 512}) {
                    const auto j = job_of("linear_decode", v, "bf16",
                                          json{{"n", n}, {"k", 64}, {"tokens", 1}});
                    const double us =
                        (v == std::string("stock") ? 10.0 : 13.0) * (run ? 0.8 : 1.0) * n / 256;
                    recs.push_back(op_time_record(j, lognormal_samples(us, 0.02, 40, n + run)));
                    recs.push_back(
                        correctness_record(j, "PASS", v == std::string("stock") ? 1e-6 : 3e-6));
                    recs.push_back(memory_record(
                        j, v == std::string("stock") ? std::optional<double>(3e9) : std::nullopt,
                        2e9, 1e9));
                }
                for (int ctx : {512, 2048}) {
                    const auto jt =
                        job_of("decode", v, "bf16", json{{"model", "tiny"}, {"ctx", ctx}});
                    recs.push_back(throughput_record(
                        jt, ctx, lognormal_samples(20.0 + ctx / 512.0, 0.02, 30, ctx + run)));
                }
            }
            write_run(s, run ? k_evil : "before",
                      provenance("Test CPU", "abc123", "host", run ? "t1" : "t0"), recs);
        }
    }
    std::string write(report::report_format f) const {
        report::report_request req;
        req.runs = {"1", "2"};
        std::ostringstream out;
        report::write_report(report::load_report(s, req), f, out);
        return out.str();
    }
};

} // namespace

TEST(report, html_escape_turns_markup_into_text) {
    EXPECT_EQ(report::html_escape(k_evil), "&lt;script&gt;alert(1)&lt;/script&gt;");
    EXPECT_EQ(report::html_escape("a&b \"c\" 'd'"), "a&amp;b &quot;c&quot; &#39;d&#39;");
}

TEST(report, html_is_self_contained_and_charts_every_ledger_with_unit_and_baseline) {
    two_runs fx;
    const auto html = fx.write(report::report_format::html);
    // nothing to fetch, nothing to run: a CSP that forbids both, no script element, no URL
    EXPECT_NE(html.find("script-src 'none'"), std::string::npos);
    EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
    EXPECT_EQ(count(html, "<script"), 0u);
    EXPECT_EQ(count(html, "https://"), 0u);
    // the only URL is the SVG namespace, once per chart: a name, never fetched
    EXPECT_EQ(count(html, "http://"), count(html, "<svg "));
    EXPECT_EQ(count(html, "xmlns=\"http://www.w3.org/2000/svg\""), count(html, "<svg "));
    // the label shows as text wherever it appears
    EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    // each kind of chart is drawn: a figure with an svg holding marks, a unit and a baseline
    const std::regex figure_re(
        "<figure class=\"chart\" data-chart=\"([a-z-]+)\" data-unit=\"([^\"]+)\" "
        "data-baseline=\"([^\"]+)\">([\\s\\S]*?)</figure>");
    std::map<std::string, int> drawn;
    for (auto it = std::sregex_iterator(html.begin(), html.end(), figure_re);
         it != std::sregex_iterator(); ++it) {
        const auto body = (*it)[4].str();
        EXPECT_NE(body.find("<svg"), std::string::npos) << (*it)[1];
        EXPECT_NE(body.find("class=\"mark"), std::string::npos) << (*it)[1];
        EXPECT_FALSE((*it)[2].str().empty());
        EXPECT_FALSE((*it)[3].str().empty());
        ++drawn[(*it)[1]];
    }
    // speed-up: within each run (generic vs stock) and run 2 vs run 1 (two variants)
    EXPECT_EQ(drawn["speedup"], 4);
    EXPECT_EQ(drawn["throughput"], 1);
    EXPECT_EQ(drawn["correctness"], 2);
    EXPECT_EQ(drawn["memory-levels"], 2);
    EXPECT_EQ(drawn["memory-timeline"], 8);
    EXPECT_EQ(count(html, "class=\"chart empty\""), 0u);
    // an unavailable level is drawn as n/a with its reason, never as a zero-length bar
    EXPECT_NE(html.find("unavailable: no driver probe on this test device"), std::string::npos);
    EXPECT_NE(html.find(report::chart_engine_text().substr(0, 30)), std::string::npos);
}

TEST(report, a_run_without_a_ledger_says_so_instead_of_an_empty_chart) {
    temp_dir dir;
    auto s = store::result_store::open(dir / "r.db", store::open_mode::read_write);
    write_run(s, "only op_time", provenance(),
              {op_time_record(job_of("softmax", "stock", "fp32", json{{"rows", 1}}), {1, 2, 3})});
    report::report_request req;
    req.runs = {"1"};
    std::ostringstream out;
    report::write_report(report::load_report(s, req), report::report_format::html, out);
    const auto html = out.str();
    EXPECT_NE(html.find("data-chart=\"throughput\""), std::string::npos);
    EXPECT_NE(html.find("no throughput records in these runs"), std::string::npos);
    EXPECT_NE(html.find("only the variant &#39;stock&#39; in this run"), std::string::npos);
    EXPECT_GE(count(html, "class=\"chart empty\""), 4u);
}

TEST(report, runs_that_differ_beyond_the_treatment_are_shown_refused_not_charted) {
    temp_dir dir;
    auto s = store::result_store::open(dir / "r.db", store::open_mode::read_write);
    const auto j = job_of("softmax", "stock", "fp32", json{{"rows", 1}});
    write_run(s, "cpu", provenance(), {op_time_record(j, {1, 2, 3})});
    write_run(s, "gpu", provenance("NVIDIA H200"), {op_time_record(j, {1, 2, 3})});
    report::report_request req;
    req.runs = {"cpu", "gpu"};
    const auto d = report::load_report(s, req);
    ASSERT_EQ(d.across.size(), 1u);
    EXPECT_FALSE(d.across[0]);
    EXPECT_NE(d.across_refused[0].find("device_model"), std::string::npos);
    std::ostringstream out;
    report::write_report(d, report::report_format::html, out);
    EXPECT_NE(out.str().find("class=\"refused\""), std::string::npos);
    req.options.allowed = {"device_model"};
    EXPECT_TRUE(report::load_report(s, req).across[0]);
}

TEST(report, markdown_and_csv_views_hold_the_same_figures) {
    two_runs fx;
    const auto md = fx.write(report::report_format::markdown);
    const auto csv = fx.write(report::report_format::csv);
    const auto c = compare::compare_in_store(fx.s, {"1", "2"}, {});
    ASSERT_FALSE(c.op_time.empty());
    // tables say speed-up (> 1: B faster), the CSV keeps the ratio B/A of time
    const auto speedup = report::speedup_cell(1 / c.op_time[0].ratio.ratio);
    EXPECT_NE(md.find(speedup), std::string::npos) << speedup;
    EXPECT_NE(md.find("geometric mean speed-up of B (&gt; 1: B faster; A/B of time)"),
              std::string::npos);
    // a Markdown viewer renders inline HTML: the label is escaped there too
    EXPECT_NE(md.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    EXPECT_EQ(md.find(k_evil), std::string::npos);
    EXPECT_NE(csv.find(fmt::format("{:.9g}", c.op_time[0].ratio.ratio)), std::string::npos);
    EXPECT_NE(csv.find("tokens_per_s"), std::string::npos);
    EXPECT_NE(csv.find("outside_allocator_bytes"), std::string::npos);
    EXPECT_NE(csv.find("unavailable"), std::string::npos);
    EXPECT_EQ(csv.substr(0, csv.find('\n')), "section,run,run_label,ledger,workload,variant,device,"
                                             "dtype,params,quantity,unit,value,baseline");
}

TEST(compare_tables, every_ledger_prints_in_its_unit_with_the_rule_and_the_baseline) {
    two_runs fx;
    const auto c = compare::compare_in_store(fx.s, {"before", "2"}, {});
    std::ostringstream text;
    report::print_comparison(c, text, report::table_format::text);
    const auto t = text.str();
    for (const char* needle :
         {"throughput: tokens/s per ctx", "op_time: microseconds per call",
          "correctness: against the float64 CPU reference", "memory: peaks in GiB", "A [µs]",
          "speed-up = B/A of tokens/s (> 1: B faster)", "speed-up = A/B of time (> 1: B faster)",
          "Δ B-A [GiB]", "none: A and B have the same provenance", "never multiplied or chained",
          "FASTER when the whole CI", "geometric mean speed-up of B",
          "not treatment (differ between any two runs)"})
        EXPECT_NE(t.find(needle), std::string::npos) << needle;
    std::ostringstream csv;
    report::write_comparison_csv(c, csv);
    std::size_t op_time_geomeans = 0;
    for (const auto& g : c.geomeans)
        op_time_geomeans += g.which == ledger::op_time ? 1 : 0;
    EXPECT_EQ(op_time_geomeans, 2u); // linear_decode stock and generic, 2 shapes each
    EXPECT_EQ(count(csv.str(), "\nop_time,"), c.op_time.size() + op_time_geomeans);
    EXPECT_NE(csv.str().find("geomean_ratio_over_2_pairs"), std::string::npos);
    // no line ends in the padding of a left-aligned last column
    std::istringstream lines(t);
    for (std::string l; std::getline(lines, l);)
        EXPECT_TRUE(l.empty() || l.back() != ' ') << "[" << l << "]";
}

TEST(compare_tables, a_ledger_without_a_pair_says_so_where_its_table_would_stand) {
    two_runs fx;
    auto c = compare::compare_in_store(fx.s, {"before", "2"}, {});
    ASSERT_FALSE(c.throughput.empty());
    c.throughput.clear(); // as for two runs of a suite with no decode job
    std::ostringstream text;
    report::print_comparison(c, text, report::table_format::text);
    EXPECT_NE(text.str().find("throughput: no record of this ledger in A or B"), std::string::npos)
        << text.str();
    EXPECT_NE(text.str().find("  throughput: no pair\n"), std::string::npos);
    EXPECT_NE(text.str().find("op_time: microseconds per call"), std::string::npos);

    compare::unpaired_row only_a;
    only_a.which = ledger::throughput;
    c.unpaired.push_back(only_a);
    std::ostringstream md;
    report::print_comparison(c, md, report::table_format::markdown);
    EXPECT_NE(md.str().find("### throughput: no measured pair: 1 record(s) unpaired, 0 skipped or "
                            "failed in A or B (listed below)"),
              std::string::npos)
        << md.str();
}

TEST(progress_line, shows_job_i_of_n_the_pass_elapsed_and_an_estimate_within_the_width) {
    const auto first =
        report::progress_line(0, 10, "softmax rows=1 vocab=128256 fp32", "op_time", 1.2, 0, 200);
    EXPECT_EQ(first,
              "[job 1/10] softmax rows=1 vocab=128256 fp32: op_time  (1 s elapsed, estimating)");
    // 4 groups done in 100 s: 25 s each; the 5th began at 100 s and has run 10 s of its 25
    const auto later =
        report::progress_line(4, 10, "linear_decode n=4096 k=4096 bf16", "memory", 110, 100, 200);
    EXPECT_NE(later.find("[job 5/10]"), std::string::npos);
    EXPECT_NE(later.find("1 min 50 s elapsed, ~2 min 20 s left"), std::string::npos) << later;
    // a group running longer than the average adds nothing of its own, never a negative time
    const auto slow = report::progress_line(9, 10, "x", "memory", 200, 100, 200);
    EXPECT_NE(slow.find("~0 s left"), std::string::npos) << slow;
    const auto narrow = report::progress_line(4, 10, std::string(300, 'x'), "memory", 110, 100, 80);
    EXPECT_LE(report::display_width(narrow), 80u);
    EXPECT_NE(narrow.find("~2 min 20 s left"), std::string::npos);
    EXPECT_EQ(report::duration_text(7300), "2 h 01 min");
}

TEST(ledger_tables, gib_figures_keep_three_decimals_and_say_when_they_round_to_nothing) {
    EXPECT_EQ(report::fmt_gib(1.5 * double(1ll << 30)), "1.500");
    EXPECT_EQ(report::fmt_gib(0), "0.000");
    EXPECT_EQ(report::fmt_gib(1000), "<0.001");
    EXPECT_EQ(report::fmt_gib(-1000), ">-0.001");
    EXPECT_EQ(report::fmt_gib(140.0 * double(1ll << 30)), "140.000");
}

// Rows keep one order in every table (correctness records arrive in another order than op_time
// ones); the params column holds what varies, what every row shares is said once; a decoder's
// random weights are said in its tables.
TEST(ledger_tables, rows_keep_one_order_and_params_are_abbreviated) {
    std::vector<record> recs;
    const auto job = [](const char* v, int n) {
        return job_of("linear_decode", v, "bf16", json{{"n", n}, {"k", 4096}, {"tokens", 1}});
    };
    for (const int n : {256, 512})
        for (const char* v : {"stock", "generic"})
            recs.push_back(op_time_record(job(v, n), lognormal_samples(10, 0.01, 20, n)));
    for (const int n : {256, 512})
        for (const char* v : {"generic", "stock"}) // the order a std::map gives
            recs.push_back(correctness_record(job(v, n), "PASS", 1e-6));
    auto decode = throughput_record(
        job_of("decode", "stock", "bf16", json{{"model", "/a/very/long/path/to/some/checkpoint"}}),
        64, lognormal_samples(5, 0.01, 20, 3));
    decode.figures["facts"] = json{{"weights", "random, seed 1 (init_seed 1)"}};
    recs.push_back(decode);
    std::ostringstream out;
    report::print_ledger_tables(recs, out, report::table_format::text,
                                report::table_layout::per_workload);
    const auto t = out.str();
    EXPECT_NE(t.find("every row: k=4096 tokens=1"), std::string::npos) << t;
    EXPECT_EQ(t.find("k=4096 n=256"), std::string::npos) << t;
    const auto op = table_identities(t, "linear_decode - op_time", "linear_decode");
    const auto cor = table_identities(t, "linear_decode - correctness", "linear_decode");
    ASSERT_EQ(op.size(), 4u);
    EXPECT_EQ(op, cor);
    EXPECT_NE(t.find("weights: random"), std::string::npos);
    EXPECT_NE(t.find("…"), std::string::npos); // the long model path keeps its end
    EXPECT_NE(t.find("some/checkpoint"), std::string::npos);
}

TEST(progress_line, estimates_from_the_time_budget_before_a_group_has_finished) {
    const auto line = report::progress_line(0, 3, "softmax rows=1", "op_time", 1.0, 0, 200, 31.0);
    EXPECT_NE(line.find("at least ~30 s left"), std::string::npos) << line;
    EXPECT_NE(report::progress_line(0, 3, "x", "op_time", 1.0, 0, 200).find("estimating"),
              std::string::npos);
}

// A whole-model workload whose throughput is not tokens/s (a VAE's frames/s per frames): the
// unit and the context axis the records declare reach every table, never "tokens" or "ctx".
TEST(compare_tables, a_throughput_in_its_own_unit_keeps_it_in_every_table) {
    using namespace fourfold::testing;
    temp_dir dir;
    auto s = store::result_store::open(dir / "f.db", store::open_mode::read_write);
    const auto j = job_of("vae_decode", "stock", "bf16", json{{"frames", 9}});
    write_run(s, "a", provenance(),
              {rate_record(j, "frames/s", "frames", 9, lognormal_samples(50, 0.02, 60, 1))});
    write_run(s, "b", provenance(),
              {rate_record(j, "frames/s", "frames", 9, lognormal_samples(40, 0.02, 60, 2))});
    const auto c = compare::compare_in_store(s, {"a", "b"}, {});
    std::ostringstream text;
    report::print_comparison(c, text, report::table_format::text);
    const auto t = text.str();
    for (const char* needle : {"throughput: frames/s per frames", "A [frames/s]", "B [frames/s]",
                               "speed-up = B/A of frames/s"})
        EXPECT_NE(t.find(needle), std::string::npos) << needle << "\n" << t;
    EXPECT_EQ(t.find("tokens"), std::string::npos) << t;
    std::ostringstream csv;
    report::write_comparison_csv(c, csv);
    EXPECT_NE(csv.str().find(",rate,frames/s,"), std::string::npos) << csv.str();
    // the run's own tables
    std::ostringstream run;
    std::vector<record> recs;
    for (const auto& r : s.records(1, true))
        recs.push_back(r.rec);
    report::print_ledger_tables(recs, run, report::table_format::text);
    EXPECT_NE(run.str().find("throughput: frames/s (1000 / median ms/frame)"), std::string::npos)
        << run.str();
    EXPECT_EQ(run.str().find("tokens"), std::string::npos) << run.str();
    // and the HTML report
    report::report_request request;
    request.runs = {"a", "b"};
    std::ostringstream html;
    report::write_report(report::load_report(s, request), report::report_format::html, html);
    EXPECT_NE(html.str().find("throughput: frames/s per frames, vae_decode"), std::string::npos);
}
