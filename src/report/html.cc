#include "report/html.h"

#include <cmath>

#include <fmt/format.h>

namespace fxt::report {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string format_number(double v, int digits) {
  if (!std::isfinite(v)) return "\u2013";
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e7 || a < 1e-4) return fmt::format("{:.{}e}", v, std::max(0, digits - 1));
  // Fixed notation with `digits` significant digits, but never fewer decimals than needed
  // to show an integer exactly.
  const int int_digits = a >= 1 ? static_cast<int>(std::floor(std::log10(a))) + 1 : 0;
  int decimals = std::max(0, digits - int_digits);
  if (a < 1) decimals = digits - 1 - static_cast<int>(std::floor(std::log10(a)));
  if (v == std::round(v) && a < 1e7) decimals = 0;
  return fmt::format("{:.{}f}", v, decimals);
}

std::string format_fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "\u2013";
  return fmt::format("{:.{}f}", v, decimals);
}

std::string format_with_interval(double v, double lo, double hi, int decimals) {
  std::string s = format_fixed(v, decimals);
  if (std::isfinite(lo) && std::isfinite(hi)) {
    s += fmt::format(" [{}, {}]", format_fixed(lo, decimals), format_fixed(hi, decimals));
  }
  return s;
}

std::string render_table(const Table& table) {
  std::string out = fmt::format("<table class=\"fxt-table\" id=\"{}\">\n", html_escape(table.id));
  if (!table.caption.empty()) {
    out += fmt::format("<caption>{}</caption>\n", html_escape(table.caption));
  }
  out += "<thead><tr>";
  for (const std::string& h : table.header) out += "<th>" + html_escape(h) + "</th>";
  out += "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    out += "<tr>";
    for (const std::string& cell : row) out += "<td>" + html_escape(cell) + "</td>";
    out += "</tr>\n";
  }
  out += "</tbody></table>\n";
  return out;
}

}  // namespace fxt::report
