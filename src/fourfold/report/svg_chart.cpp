#include "fourfold/report/svg_chart.hpp"

#include "fourfold/report/html.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <map>

namespace fourfold::report::svg {
namespace {

constexpr double k_char_px = 6.4; // average width of a character of the 11 px label font
constexpr std::size_t k_label_chars = 64;
constexpr int k_row_px = 18;
constexpr int k_top_px = 12, k_axis_px = 40;

std::string esc(std::string_view s) {
    return html_escape(s);
}

std::string shorten(const std::string& s) {
    if (s.size() <= k_label_chars)
        return s;
    return s.substr(0, k_label_chars - 3) + "...";
}

double label_width(const std::vector<std::string>& labels) {
    std::size_t n = 4;
    for (const auto& l : labels)
        n = std::max(n, std::min(l.size(), k_label_chars));
    return 12 + k_char_px * static_cast<double>(n);
}

// A linear or log10 axis mapping values onto [px0, px1].
struct axis {
    double lo = 0, hi = 1;
    bool log = false;
    double px0 = 0, px1 = 100;
    double map(double v) const {
        if (log) {
            const double l = std::log10(std::clamp(v, lo, hi));
            return px0 + (l - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) * (px1 - px0);
        }
        return px0 + (std::clamp(v, lo, hi) - lo) / (hi - lo) * (px1 - px0);
    }
    std::vector<double> ticks() const {
        std::vector<double> out;
        if (log) {
            const int a = static_cast<int>(std::floor(std::log10(lo)));
            const int b = static_cast<int>(std::ceil(std::log10(hi)));
            const int step = std::max(1, (b - a) / 7);
            for (int e = a; e <= b; e += step)
                if (const double v = std::pow(10.0, e); v >= lo * 0.999 && v <= hi * 1.001)
                    out.push_back(v);
            return out;
        }
        const double raw = (hi - lo) / 6;
        const double mag = std::pow(10.0, std::floor(std::log10(raw)));
        double step = mag;
        for (const double m : {1.0, 2.0, 2.5, 5.0, 10.0})
            if (m * mag >= raw) {
                step = m * mag;
                break;
            }
        for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step)
            out.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
        return out;
    }
};

// Widens [lo, hi] a little and to round ends; a degenerate range gets some room.
axis linear_axis(double lo, double hi, double px0, double px1) {
    if (!(hi > lo)) {
        const double pad = std::max(std::fabs(hi) * 0.1, 1e-12);
        lo -= pad;
        hi += pad;
    }
    const double pad = (hi - lo) * 0.05;
    axis a{lo - (lo == 0 ? 0 : pad), hi + pad, false, px0, px1};
    return a;
}

std::string svg_open(double width, double height, const std::string& label) {
    return fmt::format("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"{:.0f}\" "
                       "height=\"{:.0f}\" viewBox=\"0 0 {:.0f} {:.0f}\" role=\"img\" "
                       "aria-label=\"{}\">\n",
                       width, height, width, height, esc(label));
}

std::string x_axis(const axis& a, double y, double top, const std::string& label) {
    std::string out =
        fmt::format("<g class=\"axis\"><line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" "
                    "y2=\"{:.1f}\"/>\n",
                    a.px0, y, a.px1, y);
    for (const double t : a.ticks()) {
        const double x = a.map(t);
        out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
                           "y2=\"{2:.1f}\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                           "text-anchor=\"middle\">{4}</text>\n",
                           x, top, y, y + 14, esc(tick_text(t)));
    }
    out += fmt::format("<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" "
                       "text-anchor=\"middle\">{}</text></g>\n",
                       (a.px0 + a.px1) / 2, y + 32, esc(label));
    return out;
}

std::string legend_row(const std::vector<std::pair<std::string, std::string>>& items, double x,
                       double y) {
    std::string out = "<g class=\"legend\">";
    for (const auto& [css, text] : items) {
        out += fmt::format("<rect class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"10\" "
                           "height=\"10\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                           esc(css), x, y - 9, x + 14, y, esc(text));
        x += 24 + k_char_px * static_cast<double>(text.size());
    }
    return out + "</g>\n";
}

} // namespace

std::string tick_text(double v) {
    if (v == 0)
        return "0";
    const double a = std::fabs(v);
    if (a >= 1e5 || a < 1e-3)
        return fmt::format("{:.0e}", v);
    return fmt::format("{:g}", v);
}

std::string figure(const frame& f, const std::string& svg_markup) {
    std::string out = fmt::format(
        "<figure class=\"chart\" data-chart=\"{}\" data-unit=\"{}\" data-baseline=\"{}\">\n"
        "<figcaption><strong>{}</strong><br><span class=\"unit\">unit: {}</span> · "
        "<span class=\"baseline\">baseline: {}</span>",
        esc(f.kind), esc(f.unit), esc(f.baseline), esc(f.title), esc(f.unit), esc(f.baseline));
    if (!f.note.empty())
        out += fmt::format("<br><span class=\"note\">{}</span>", esc(f.note));
    return out + "</figcaption>\n" + svg_markup + "</figure>\n";
}

std::string empty_figure(const frame& f, const std::string& why) {
    return fmt::format("<figure class=\"chart empty\" data-chart=\"{}\" data-unit=\"{}\" "
                       "data-baseline=\"{}\">\n<figcaption><strong>{}</strong><br><span "
                       "class=\"unit\">unit: {}</span> · <span class=\"baseline\">baseline: "
                       "{}</span></figcaption>\n<p class=\"empty-why\">{}</p></figure>\n",
                       esc(f.kind), esc(f.unit), esc(f.baseline), esc(f.title), esc(f.unit),
                       esc(f.baseline), esc(why));
}

std::string bar_chart(const bar_spec& spec) {
    std::vector<std::string> labels;
    double lo = spec.reference, hi = spec.reference;
    for (const auto& b : spec.bars) {
        labels.push_back(b.label);
        for (const double v : {b.value, b.low.value_or(b.value), b.high.value_or(b.value)})
            if (std::isfinite(v)) {
                lo = std::min(lo, v);
                hi = std::max(hi, v);
            }
    }
    if (spec.band) {
        lo = std::min(lo, spec.band->first);
        hi = std::max(hi, spec.band->second);
    }
    const double left = label_width(labels);
    const double width = std::max(760.0, left + 560);
    const double legend_px = spec.legend.empty() ? 0 : 20;
    const double plot_h = static_cast<double>(spec.bars.size()) * k_row_px;
    const double height = k_top_px + legend_px + plot_h + k_axis_px;
    const double top = k_top_px + legend_px;
    const auto a = linear_axis(lo, hi, left, width - 16);
    std::string out = svg_open(width, height, "bar chart");
    if (!spec.legend.empty())
        out += legend_row(spec.legend, left, k_top_px + 8);
    if (spec.band)
        out += fmt::format(
            "<rect class=\"band\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
            "height=\"{:.1f}\"><title>{}</title></rect>\n",
            a.map(spec.band->first), top, a.map(spec.band->second) - a.map(spec.band->first),
            plot_h,
            esc(fmt::format("practical threshold: {} to {}", tick_text(spec.band->first),
                            tick_text(spec.band->second))));
    out += x_axis(a, top + plot_h, top, spec.axis_label);
    out += "<g class=\"marks\">\n";
    const double ref_x = a.map(spec.reference);
    for (std::size_t i = 0; i < spec.bars.size(); ++i) {
        const auto& b = spec.bars[i];
        const double y = top + static_cast<double>(i) * k_row_px;
        out += fmt::format("<text class=\"row-label\" x=\"{:.1f}\" y=\"{:.1f}\" "
                           "text-anchor=\"end\">{}<title>{}</title></text>\n",
                           left - 6, y + 12.5, esc(shorten(b.label)), esc(b.label));
        if (!std::isfinite(b.value))
            continue;
        const double x = a.map(b.value);
        out += fmt::format("<rect class=\"mark {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                           "height=\"{}\"><title>{}</title></rect>\n",
                           esc(b.css), std::min(x, ref_x), y + 3,
                           std::max(1.0, std::fabs(x - ref_x)), k_row_px - 6, esc(b.tooltip));
        if (b.low && b.high && std::isfinite(*b.low) && std::isfinite(*b.high))
            out += fmt::format(
                "<path class=\"whisker\" d=\"M{0:.1f},{2:.1f}H{1:.1f}M{0:.1f},{3:.1f}"
                "V{4:.1f}M{1:.1f},{3:.1f}V{4:.1f}\"/>\n",
                a.map(*b.low), a.map(*b.high), y + k_row_px / 2.0, y + 5, y + k_row_px - 5);
    }
    out +=
        fmt::format("</g>\n<line class=\"reference\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" "
                    "y2=\"{2:.1f}\"/>\n",
                    ref_x, top, top + plot_h);
    return out + "</svg>\n";
}

std::string grouped_chart(const group_spec& spec) {
    std::vector<std::string> labels;
    double lo = INFINITY, hi = -INFINITY;
    bool any_zero = false;
    for (const auto& r : spec.rows) {
        labels.push_back(r.label);
        auto take = [&](double v) {
            if (!std::isfinite(v))
                return;
            if (spec.dots_on_log_axis && v <= 0) {
                any_zero = true;
                return;
            }
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        };
        for (const auto& v : r.values)
            if (v)
                take(*v);
        if (r.mark)
            take(*r.mark);
    }
    if (!std::isfinite(lo)) {
        lo = spec.dots_on_log_axis ? 1e-8 : 0;
        hi = 1;
    }
    const double left = label_width(labels);
    const double width = std::max(760.0, left + 560);
    const std::size_t per_row =
        spec.dots_on_log_axis ? 1 : std::max<std::size_t>(1, spec.series.size());
    const double row_h = spec.dots_on_log_axis ? k_row_px : 6.0 * static_cast<double>(per_row) + 8;
    const double top = k_top_px + 20;
    const double plot_h = static_cast<double>(spec.rows.size()) * row_h;
    const double height = top + plot_h + k_axis_px;
    axis a;
    if (spec.dots_on_log_axis) {
        const double l = std::pow(10.0, std::floor(std::log10(lo)));
        const double h = std::pow(10.0, std::ceil(std::log10(hi)));
        a = axis{l, h > l ? h : l * 10, true, left, width - 16};
    } else {
        a = linear_axis(0, hi, left, width - 16);
    }
    std::vector<std::pair<std::string, std::string>> legend;
    for (std::size_t s = 0; s < spec.series.size(); ++s)
        legend.emplace_back(fmt::format("s{}", s % 7), spec.series[s]);
    if (!spec.mark_label.empty())
        legend.emplace_back("tick", spec.mark_label);
    std::string out = svg_open(width, height, "grouped chart");
    out += legend_row(legend, left, k_top_px + 8);
    out += x_axis(a, top + plot_h, top,
                  spec.axis_label + (any_zero ? " (0 drawn at the left edge)" : ""));
    out += "<g class=\"marks\">\n";
    for (std::size_t i = 0; i < spec.rows.size(); ++i) {
        const auto& r = spec.rows[i];
        const double y = top + static_cast<double>(i) * row_h;
        if (i % 2 == 1)
            out += fmt::format("<rect class=\"stripe\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                               "height=\"{:.1f}\"/>\n",
                               left, y, width - 16 - left, row_h);
        out += fmt::format("<text class=\"row-label\" x=\"{:.1f}\" y=\"{:.1f}\" "
                           "text-anchor=\"end\">{}<title>{}</title></text>\n",
                           left - 6, y + row_h / 2 + 4, esc(shorten(r.label)), esc(r.label));
        if (r.mark)
            out += fmt::format("<path class=\"tick\" d=\"M{0:.1f},{1:.1f}V{2:.1f}\"><title>{3}: "
                               "{4}</title></path>\n",
                               a.map(*r.mark), y + 1, y + row_h - 1, esc(spec.mark_label),
                               esc(tick_text(*r.mark)));
        for (std::size_t s = 0; s < r.values.size(); ++s) {
            const auto tip = s < r.tooltips.size() ? r.tooltips[s] : std::string();
            const auto css = fmt::format("s{}", s % 7);
            const double slot_y =
                spec.dots_on_log_axis ? y + row_h / 2 : y + 4 + 6.0 * static_cast<double>(s);
            if (!r.values[s] || !std::isfinite(*r.values[s])) {
                const auto why = s < r.why_missing.size() ? r.why_missing[s] : std::string();
                if (spec.dots_on_log_axis)
                    continue; // a series without this row: nothing to say
                out += fmt::format("<text class=\"na\" x=\"{:.1f}\" y=\"{:.1f}\">n/a<title>{}: "
                                   "unavailable: {}</title></text>\n",
                                   a.px0 + 2, slot_y + 5, esc(spec.series[s]), esc(why));
                continue;
            }
            const double v = *r.values[s];
            if (spec.dots_on_log_axis) {
                const double x = v <= 0 ? a.px0 : a.map(v);
                out += fmt::format("<circle class=\"mark {}\" cx=\"{:.1f}\" cy=\"{:.1f}\" "
                                   "r=\"4\"><title>{}</title></circle>\n",
                                   css, x, slot_y, esc(tip));
            } else {
                out += fmt::format(
                    "<rect class=\"mark {}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                    "height=\"5\"><title>{}</title></rect>\n",
                    css, a.px0, slot_y, std::max(1.0, a.map(v) - a.px0), esc(tip));
            }
        }
    }
    return out + "</g>\n</svg>\n";
}

std::string line_chart(const line_spec& spec) {
    double x_lo = INFINITY, x_hi = -INFINITY, y_hi = 0;
    std::vector<double> xs;
    for (const auto& s : spec.lines)
        for (const auto& [x, y] : s.points) {
            x_lo = std::min(x_lo, x);
            x_hi = std::max(x_hi, x);
            y_hi = std::max(y_hi, y / spec.y_divisor);
            xs.push_back(x);
        }
    std::sort(xs.begin(), xs.end());
    xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
    if (xs.empty()) {
        x_lo = 0;
        x_hi = 1;
    }
    const double left = 64, right = 16, top = k_top_px + 6;
    double legend_h = 0;
    if (spec.legend)
        legend_h = 18.0 * static_cast<double>(spec.lines.size());
    const double width = spec.width, height = spec.height + legend_h;
    const double plot_bottom = spec.height - k_axis_px;
    axis ax;
    if (spec.categorical_x)
        ax = axis{0, std::max<double>(1, static_cast<double>(xs.size()) - 1) + 0.0, false,
                  left + 20, width - right - 20};
    else
        ax = linear_axis(x_lo, x_hi, left, width - right);
    auto x_of = [&](double x) {
        if (!spec.categorical_x)
            return ax.map(x);
        const auto i = std::lower_bound(xs.begin(), xs.end(), x) - xs.begin();
        return xs.size() == 1 ? (ax.px0 + ax.px1) / 2 : ax.map(static_cast<double>(i));
    };
    // y grows upwards: map onto [plot_bottom, top]
    const auto ay = linear_axis(0, y_hi > 0 ? y_hi : 1, plot_bottom, top);
    std::string out = svg_open(width, height, "line chart");
    out += "<g class=\"axis\">";
    for (const double t : ay.ticks()) {
        const double y = ay.map(t);
        out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" "
                           "y2=\"{1:.1f}\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
                           "text-anchor=\"end\">{5}</text>\n",
                           left, y, width - right, left - 4, y + 4, esc(tick_text(t)));
    }
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\"/>", left,
                       plot_bottom, width - right);
    if (spec.categorical_x) {
        for (const double x : xs)
            out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                               x_of(x), plot_bottom + 14, esc(tick_text(x)));
    } else {
        for (const double t : ax.ticks())
            out += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                               ax.map(t), plot_bottom + 14, esc(tick_text(t)));
    }
    out += fmt::format("<text class=\"axis-label\" x=\"{:.1f}\" y=\"{:.1f}\" "
                       "text-anchor=\"middle\">{}</text>",
                       (left + width - right) / 2, plot_bottom + 32, esc(spec.x_label));
    out += fmt::format("<text class=\"axis-label\" transform=\"translate(14,{:.1f}) rotate(-90)\" "
                       "text-anchor=\"middle\">{}</text></g>\n",
                       (top + plot_bottom) / 2, esc(spec.y_label));
    out += "<g class=\"marks\">\n";
    for (std::size_t i = 0; i < spec.lines.size(); ++i) {
        const auto& s = spec.lines[i];
        const int colour = (s.colour >= 0 ? s.colour : static_cast<int>(i)) % 7;
        std::string d;
        for (const auto& [x, y] : s.points)
            d += fmt::format("{}{:.1f},{:.1f}", d.empty() ? "M" : "L", x_of(x),
                             ay.map(y / spec.y_divisor));
        if (d.empty())
            continue;
        out += fmt::format("<path class=\"mark line c{}{}\" d=\"{}\"><title>{}</title></path>\n",
                           colour, s.dashed ? " dashed" : "", d, esc(s.name));
        if (s.points.size() <= 40 && !s.dashed)
            for (const auto& [x, y] : s.points)
                out += fmt::format("<circle class=\"dot c{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" "
                                   "r=\"3\"><title>{}: {} at {}</title></circle>\n",
                                   colour, x_of(x), ay.map(y / spec.y_divisor), esc(s.name),
                                   esc(tick_text(y / spec.y_divisor)), esc(tick_text(x)));
    }
    out += "</g>\n";
    if (spec.legend) {
        out += "<g class=\"legend\">";
        for (std::size_t i = 0; i < spec.lines.size(); ++i) {
            const auto& s = spec.lines[i];
            const int colour = (s.colour >= 0 ? s.colour : static_cast<int>(i)) % 7;
            const double y = spec.height + 18.0 * static_cast<double>(i);
            out += fmt::format("<path class=\"line c{}{}\" d=\"M{:.1f},{:.1f}h24\"/><text "
                               "x=\"{:.1f}\" y=\"{:.1f}\">{}</text>",
                               colour, s.dashed ? " dashed" : "", left, y - 4, left + 30, y,
                               esc(s.name));
        }
        out += "</g>\n";
    }
    return out + "</svg>\n";
}

} // namespace fourfold::report::svg
