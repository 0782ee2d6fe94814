// Aligned, labelled tables: labels padded, cells right-aligned per column.
#include "cli/render/table_render.hpp"

#include <algorithm>

#include "cli/render/render_text.hpp"

namespace glassbox::cli::render {
namespace {

// A count or a number ("2,499", "0.42", "-"): right-aligned. Anything else is text.
bool is_number_cell(const std::string& cell) {
    return !cell.empty() && cell.find_first_not_of("0123456789,.-%") == std::string::npos;
}

// The column titles of a table of numbers: a row without a label, right-aligned over them.
bool is_title_row(const TableRow& row) { return row.label.empty(); }

}  // namespace

std::string render_rows(const std::vector<TableRow>& rows) {
    constexpr std::size_t kIndent = 2;
    std::size_t label_width = 0;
    std::vector<std::size_t> widths;
    for (const auto& row : rows) {
        if (row.cells.empty()) continue;
        label_width = std::max(label_width, detail::code_points(row.label));
        if (widths.size() < row.cells.size()) widths.resize(row.cells.size(), 0);
        for (std::size_t i = 0; i < row.cells.size(); ++i) {
            // Text (a model name, an error) does not widen a column of numbers.
            if (is_number_cell(row.cells[i]) || is_title_row(row))
                widths[i] = std::max(widths[i], detail::code_points(row.cells[i]));
        }
    }
    std::string out;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const auto& row = rows[r];
        if (row.cells.empty()) {
            if (r > 0) out += '\n';
            out += detail::escape_controls(row.label, false) + '\n';
            continue;
        }
        std::string line(kIndent, ' ');
        line += detail::pad(detail::escape_controls(row.label, false), label_width);
        for (std::size_t i = 0; i < row.cells.size(); ++i) {
            const std::string cell = detail::escape_controls(row.cells[i], false);
            const std::size_t length = detail::code_points(cell);
            line += "  ";
            const bool right = is_number_cell(row.cells[i]) || is_title_row(row);
            if (right && length < widths[i]) line.append(widths[i] - length, ' ');
            line += cell;
        }
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + '\n';
    }
    return out;
}

}  // namespace glassbox::cli::render
