#pragma once
// Charts as inline SVG, written by fourfold itself: no chart library, no script, nothing to fetch
// when the report is opened. Every chart comes in a <figure> that names its unit and its
// baseline; every mark carries a <title> (the browser's tooltip) with its exact figures.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fourfold::report::svg {

// What every chart states. `kind` names the chart type for tests and styles (data-chart).
struct frame {
    std::string kind;
    std::string title;
    std::string unit;
    std::string baseline;
    std::string note; // e.g. the geometric mean and what it is over
};

// <figure class="chart" data-chart=...> with a caption stating title, unit and baseline.
std::string figure(const frame& f, const std::string& svg_markup);
// The same frame, drawn as a statement of why there is nothing to chart.
std::string empty_figure(const frame& f, const std::string& why);

// Horizontal bars from a reference value (1 for ratios, 0 for amounts), with optional CI
// whiskers and a shaded band (the practical threshold around 1).
struct bar {
    std::string label;
    double value = 0;
    std::optional<double> low, high;
    std::string css; // class of the bar: "faster", "slower", "same", "unclear", "s0".."s6"
    std::string tooltip;
};
struct bar_spec {
    std::vector<bar> bars;
    double reference = 0;
    std::optional<std::pair<double, double>> band;
    std::string axis_label;
    std::vector<std::pair<std::string, std::string>> legend; // css class, text
};
std::string bar_chart(const bar_spec& spec);

// Rows of several series each, as grouped horizontal bars (linear from 0) or dots (log axis).
// A missing value is drawn as "n/a" with its reason in the tooltip, never as 0.
struct group_row {
    std::string label;
    std::vector<std::optional<double>> values; // one per series
    std::vector<std::string> why_missing;      // one per series
    std::optional<double> mark;                // a reference tick on this row (a tolerance)
    std::vector<std::string> tooltips;         // one per series
};
struct group_spec {
    std::vector<std::string> series;
    std::vector<group_row> rows;
    std::string axis_label;
    bool dots_on_log_axis = false;
    std::string mark_label; // what the reference tick is ("tolerance")
};
std::string grouped_chart(const group_spec& spec);

// Lines over a numeric x axis; `categorical_x` places the distinct x values evenly (context
// lengths 512, 2048, 8192 read better evenly spaced) and labels them.
struct series {
    std::string name;
    std::vector<std::pair<double, double>> points;
    bool dashed = false;
    int colour = -1; // index into the palette; -1: by position
};
struct line_spec {
    std::vector<series> lines;
    std::string x_label, y_label;
    bool categorical_x = false;
    double y_divisor = 1; // figures are divided by this before drawing (bytes -> GiB)
    int width = 720, height = 300;
    bool legend = true;
};
std::string line_chart(const line_spec& spec);

// "1.5", "0.25", "1e-05": tick labels.
std::string tick_text(double v);

} // namespace fourfold::report::svg
