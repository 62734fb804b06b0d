#include "fourfold/report/text_table.hpp"

#include "fourfold/report/html.hpp"

#include <algorithm>

namespace fourfold::report {

std::size_t display_width(const std::string& text) {
    std::size_t n = 0;
    for (const unsigned char c : text)
        if ((c & 0xc0) != 0x80)
            ++n;
    return n;
}

void text_table::add_row(std::vector<std::string> cells) {
    cells.resize(m_columns.size());
    m_rows.push_back(std::move(cells));
}

void text_table::print(std::ostream& out) const {
    std::vector<std::size_t> width(m_columns.size());
    for (std::size_t c = 0; c < m_columns.size(); ++c) {
        width[c] = display_width(m_columns[c].header);
        for (const auto& row : m_rows)
            width[c] = std::max(width[c], display_width(row[c]));
    }
    // One line of cells, without the padding a left-aligned last cell would leave at its end.
    auto render = [&](auto&& text_of) {
        std::string s;
        for (std::size_t c = 0; c < m_columns.size(); ++c) {
            const std::string& text = text_of(c);
            const std::string pad(width[c] - display_width(text), ' ');
            s += (c ? "  " : "") +
                 (m_columns[c].alignment == align::right ? pad + text : text + pad);
        }
        return s.erase(s.find_last_not_of(' ') + 1);
    };
    std::vector<std::string> lines{
        render([&](std::size_t c) -> const std::string& { return m_columns[c].header; })};
    for (const auto& row : m_rows)
        lines.push_back(render([&](std::size_t c) -> const std::string& { return row[c]; }));
    std::size_t rule = 0;
    for (const auto& l : lines)
        rule = std::max(rule, display_width(l));
    out << m_title << '\n';
    for (const auto& n : m_notes)
        out << "  " << n << '\n';
    out << lines[0] << '\n' << std::string(rule, '-') << '\n';
    for (std::size_t i = 1; i < lines.size(); ++i)
        out << lines[i] << '\n';
}

std::string markdown_escape(const std::string& text) {
    std::string r;
    for (const char ch : text) {
        switch (ch) {
        case '|':
            r += "\\|";
            break;
        case '<':
            r += "&lt;";
            break;
        case '>':
            r += "&gt;";
            break;
        case '&':
            r += "&amp;";
            break;
        default:
            r += ch;
        }
    }
    return r;
}

void text_table::print_markdown(std::ostream& out) const {
    const auto escape = markdown_escape;
    out << "### " << m_title << "\n\n";
    for (const auto& n : m_notes)
        out << "- " << escape(n) << '\n';
    if (!m_notes.empty())
        out << '\n';
    out << '|';
    for (const auto& c : m_columns)
        out << ' ' << escape(c.header) << " |";
    out << "\n|";
    for (const auto& c : m_columns)
        out << (c.alignment == align::right ? " ---: |" : " --- |");
    out << '\n';
    for (const auto& row : m_rows) {
        out << '|';
        for (const auto& cell : row)
            out << ' ' << escape(cell) << " |";
        out << '\n';
    }
    out << '\n';
}

void text_table::print_html(std::ostream& out) const {
    auto cls = [&](std::size_t c) {
        return m_columns[c].alignment == align::right ? " class=\"num\"" : "";
    };
    for (const auto& n : m_notes)
        out << "<p class=\"line\">" << html_escape(n) << "</p>\n";
    out << "<table>\n<caption>" << html_escape(m_title) << "</caption>\n<thead><tr>";
    for (std::size_t c = 0; c < m_columns.size(); ++c)
        out << "<th" << cls(c) << ">" << html_escape(m_columns[c].header) << "</th>";
    out << "</tr></thead>\n<tbody>\n";
    for (const auto& row : m_rows) {
        out << "<tr>";
        for (std::size_t c = 0; c < m_columns.size(); ++c)
            out << "<td" << cls(c) << ">" << html_escape(row[c]) << "</td>";
        out << "</tr>\n";
    }
    out << "</tbody>\n</table>\n";
}

} // namespace fourfold::report
