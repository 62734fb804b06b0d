#pragma once
// A plain-text table for terminals and logs: a title, headers that carry their units, columns
// aligned (numbers right, text left), and the same content as Markdown when asked.
#include <ostream>
#include <string>
#include <vector>

namespace fourfold::report {

enum class align { left, right };

struct column {
    std::string header;
    align alignment = align::left;
};

class text_table {
  public:
    text_table(std::string title, std::vector<column> columns)
        : m_title(std::move(title)), m_columns(std::move(columns)) {}
    void add_row(std::vector<std::string> cells);
    // A line printed under the title, before the rows (what every row shares, what a column
    // means where it needs saying).
    void add_note(std::string text) { m_notes.push_back(std::move(text)); }
    bool empty() const { return m_rows.empty(); }
    void print(std::ostream& out) const;
    void print_markdown(std::ostream& out) const;
    // A <table> with the title as caption; every cell escaped.
    void print_html(std::ostream& out) const;

  private:
    std::string m_title;
    std::vector<column> m_columns;
    std::vector<std::vector<std::string>> m_rows;
    std::vector<std::string> m_notes;
};

// Text for Markdown: '|' would end a table cell, and a Markdown viewer renders inline HTML, so
// < > & become entities (a label like <script> stays text).
std::string markdown_escape(const std::string& text);

// Width of a UTF-8 string in terminal columns (counts code points; our text has no wide glyphs).
std::size_t display_width(const std::string& text);

} // namespace fourfold::report
