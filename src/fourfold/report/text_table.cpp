#include "fourfold/report/text_table.hpp"

#include <algorithm>

namespace fourfold::report {

std::size_t display_width(const std::string& text) {
    std::size_t n = 0;
    for (const unsigned char c : text)
        if ((c & 0xc0) != 0x80) ++n;
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
        for (const auto& row : m_rows) width[c] = std::max(width[c], display_width(row[c]));
    }
    auto cell = [&](const std::string& text, std::size_t c) {
        const std::string pad(width[c] - display_width(text), ' ');
        return m_columns[c].alignment == align::right ? pad + text : text + pad;
    };
    out << m_title << '\n';
    std::size_t total = 0;
    for (std::size_t c = 0; c < m_columns.size(); ++c) {
        out << (c ? "  " : "") << cell(m_columns[c].header, c);
        total += width[c] + (c ? 2 : 0);
    }
    out << '\n' << std::string(total, '-') << '\n';
    for (const auto& row : m_rows) {
        for (std::size_t c = 0; c < m_columns.size(); ++c) out << (c ? "  " : "") << cell(row[c], c);
        out << '\n';
    }
}

void text_table::print_markdown(std::ostream& out) const {
    auto escape = [](const std::string& s) {
        std::string r;
        for (const char ch : s) {
            if (ch == '|') r += '\\';
            r += ch;
        }
        return r;
    };
    out << "### " << m_title << "\n\n|";
    for (const auto& c : m_columns) out << ' ' << escape(c.header) << " |";
    out << "\n|";
    for (const auto& c : m_columns) out << (c.alignment == align::right ? " ---: |" : " --- |");
    out << '\n';
    for (const auto& row : m_rows) {
        out << '|';
        for (const auto& cell : row) out << ' ' << escape(cell) << " |";
        out << '\n';
    }
    out << '\n';
}

} // namespace fourfold::report
