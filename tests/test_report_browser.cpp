// The HTML report in a real browser (headless Chromium, Debian's `chromium`): a real run
// labelled <script>alert(1)</script>, its report loaded from disk with the network closed;
// no console message at all, every chart drawn in the DOM, the label shown as text. The
// screenshot is kept in the build tree for people to look at.
#include "test_helpers.hpp"

#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <regex>
#include <sstream>

using namespace fourfold::testing;
namespace fs = std::filesystem;

namespace {

const char* k_label = "<script>alert(1)</script>";
const char* k_quick = " --min-time 0.05 --timeout 0.5 --warmup 0.005 --quiet";

std::string chromium_path() {
    if (const char* env = std::getenv("FOURFOLD_CHROMIUM"); env && *env)
        return env;
    return "/usr/bin/chromium";
}

struct browser_result {
    int code = -1;
    std::string dom, log;
};

// One headless load: the DOM after load on stdout, console messages in the log (Chromium logs
// each as "...:INFO:CONSOLE(...)" with --enable-logging=stderr --v=0), a screenshot.
browser_result load(const fs::path& page, const fs::path& screenshot, const temp_dir& dir) {
    const auto profile = dir / ("profile-" + screenshot.stem().string());
    fs::create_directories(profile);
    const auto dom = dir / (screenshot.stem().string() + ".dom.html");
    const auto log = dir / (screenshot.stem().string() + ".log");
    const std::string cmd =
        chromium_path() +
        " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
        " --disable-background-networking --disable-component-update --disable-sync"
        " --user-data-dir=" +
        profile +
        " --enable-logging=stderr --v=0 --hide-scrollbars --window-size=1400,6000"
        " --screenshot=" +
        screenshot.string() + " --dump-dom file://" + page.string() + " >" + dom + " 2>" + log;
    const int status = std::system(cmd.c_str());
    browser_result r;
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.dom = read_file(dom);
    r.log = read_file(log);
    return r;
}

std::size_t count(const std::string& text, const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1))
        ++n;
    return n;
}

} // namespace

TEST(report_browser, headless_chromium_draws_every_chart_without_console_errors) {
    ASSERT_TRUE(fs::exists(chromium_path()))
        << chromium_path()
        << " is missing: install Debian's chromium (bash scripts/setup.sh test does), "
        << "or set FOURFOLD_CHROMIUM, or leave this test out with ctest -LE browser";
    temp_dir dir;
    const auto db = (dir / "b.db");
    // the label goes through the shell in single quotes, exactly as a user would type it
    const std::string label = std::string(" --label '") + k_label + "'";
    const auto softmax = run_cli("run --workload softmax --shape 1x1000 --dtype fp32,bf16 --db " +
                                     db + label + k_quick,
                                 dir);
    ASSERT_EQ(softmax.code, 0) << softmax.err;
    const auto linear = run_cli(
        "run --workload linear_decode --shape 1x256x256 --dtype fp32 --db " + db + label + k_quick,
        dir);
    ASSERT_EQ(linear.code, 0) << linear.err;
    const fs::path page = dir / "report.html";
    const auto rep = run_cli("report 1 2 -o " + page.string() + " --db " + db, dir);
    ASSERT_EQ(rep.code, 0) << rep.err;

    const fs::path keep = FOURFOLD_BUILD_DIR;
    const auto shot = keep / "report_browser_screenshot.png";
    fs::remove(shot);
    const auto r = load(page, shot, dir);
    ASSERT_EQ(r.code, 0) << r.log;
    fs::copy_file(page, keep / "report_browser.html", fs::copy_options::overwrite_existing);

    // no console message of any kind: no script error, no blocked fetch, no CSP violation
    std::string console;
    std::istringstream lines(r.log);
    for (std::string line; std::getline(lines, line);)
        if (line.find(":CONSOLE") != std::string::npos)
            console += line + "\n";
    EXPECT_TRUE(console.empty()) << console;

    // the label is text in the DOM, never an element
    EXPECT_NE(r.dom.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
    EXPECT_EQ(count(r.dom, "<script"), 0u);

    // every chart the browser built: an <svg> with marks, a caption naming unit and baseline
    const std::regex figure_re(
        "<figure class=\"chart\" data-chart=\"([a-z-]+)\"([^>]*)>([\\s\\S]*?)</figure>");
    std::map<std::string, int> drawn;
    for (auto it = std::sregex_iterator(r.dom.begin(), r.dom.end(), figure_re);
         it != std::sregex_iterator(); ++it) {
        const auto kind = (*it)[1].str();
        const auto body = (*it)[3].str();
        EXPECT_NE(body.find("<svg"), std::string::npos) << kind;
        EXPECT_NE(body.find("class=\"mark"), std::string::npos) << kind << " has no marks";
        EXPECT_NE(body.find("unit: "), std::string::npos) << kind;
        EXPECT_NE(body.find("baseline: "), std::string::npos) << kind;
        ++drawn[kind];
    }
    // within each run, generic against stock: softmax (fp32 and bf16 in one chart), linear;
    // run 2 against run 1 pairs nothing (other workloads): no chart, its tables say so
    EXPECT_EQ(drawn["speedup"], 2);
    EXPECT_EQ(drawn["correctness"], 2); // one per run
    EXPECT_EQ(drawn["memory-levels"], 2);
    EXPECT_EQ(drawn["memory-timeline"], 6); // one per memory record: 4 softmax, 2 linear
    // no decoder in these runs: the tokens/s chart says why instead of drawing nothing
    const std::regex empty_re("<figure class=\"chart empty\" data-chart=\"throughput\"[\\s\\S]*?"
                              "<p class=\"empty-why\">([^<]+)</p>");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.dom, m, empty_re));
    EXPECT_NE(m[1].str().find("no throughput records"), std::string::npos);

    // the screenshot shows a page, not a blank window: far larger than a blank page's
    ASSERT_TRUE(fs::exists(shot));
    const auto png = read_file(shot);
    ASSERT_GT(png.size(), 8u);
    EXPECT_EQ(png.substr(1, 3), "PNG");
    write_file(dir / "blank.html", "<!DOCTYPE html><html><body></body></html>");
    const auto blank_shot = dir / "blank.png";
    ASSERT_EQ(load(dir / "blank.html", blank_shot, dir).code, 0);
    EXPECT_GT(fs::file_size(shot), 4 * fs::file_size(blank_shot));
}
