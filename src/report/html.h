// HTML pieces of `fxt report`: escaping, number formatting for tables and the one table
// builder. Every table is <table class="fxt-table" id="ID">, with the first column a row label
// and the other columns right-aligned values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fxt::report {

// &, <, >, " and ' escaped: safe in text and in double-quoted attributes.
std::string html_escape(std::string_view text);

// A number for a table cell: `digits` significant digits in fixed or exponent form as fits;
// non-finite values read "–" (undefined, e.g. an AUC with one class present).
std::string format_number(double v, int digits = 4);
// Fixed decimals ("0.8958"); non-finite values read "–".
std::string format_fixed(double v, int decimals);
// "0.8958 [0.7730, 0.9352]" at `decimals` decimals; without a finite interval just the value.
std::string format_with_interval(double v, double lo, double hi, int decimals = 4);

struct Table {
  std::string id;       // unique in the document
  std::string caption;  // shown above the table; may be empty
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;  // plain text cells (escaped when rendered)
};
std::string render_table(const Table& table);

}  // namespace fxt::report
