// gui/src/planner/compare_cells.h — what each row of the Compare table says for one scenario: plain
// functions from a CompareColumn (and the current one, for the "what differs" row) to text, and to
// a number where the row is one. The answer's wording is plan::summarize_capacity's.
//
//   QString t = compare_cell_text(CompareModel::kHeadlineRow, pinned, current);   // "124 concurrent users"
//   std::optional<double> b = compare_cell_number(CompareModel::kKvBytesPerTokenRow, pinned);
#pragma once

#include <QString>

#include <optional>

#include "compare_model.h"

namespace kvplan::gui {

// "searching…": an answer row of a column whose capacity search has not answered yet.
QString searching_text();
QString compare_row_name(int row);
// Rows from kHeadlineRow to kSourceRow come from the capacity answer.
bool is_answer_row(int row);
QString compare_cell_text(int row, const CompareColumn& c, const CompareColumn& current);
// Users or requests/s (headline), bytes (weights, KV budget, bytes per token), tokens, requests.
std::optional<double> compare_cell_number(int row, const CompareColumn& c);
// Settings of `c` that differ from `current`'s, "flag=value" joined by ", " ("" when none).
QString differing_settings(const plan::Scenario& c, const plan::Scenario& current);

}  // namespace kvplan::gui
