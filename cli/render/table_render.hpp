// Aligned, labelled tables for the CLI's counts (`glassbox traces stats`, `glassbox graph stats`).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace glassbox::cli::render {

// One row: a label and its cells. A row with no cells is a heading: printed flush left, after
// a blank line unless it is the first row; the rows under it are indented.
struct TableRow {
    std::string label;
    std::vector<std::string> cells;
};

// Labels left-aligned and padded to the widest of the table; numbers ("2,499", "0.42", "-")
// right-aligned to the widest of their column, so they line up by their last digit; a row
// with an empty label holds column titles, right-aligned the same; text cells (a model name,
// an error) start where their column starts and do not widen it. Two spaces between columns.
// Control characters are escaped.
std::string render_rows(const std::vector<TableRow>& rows);

}  // namespace glassbox::cli::render
