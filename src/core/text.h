// Small text helpers shared by the command-line parsers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fxt {

// "a,b,,c" -> {"a", "b", "", "c"}; "" -> {""}. Fields are copied (flag values, not hot paths).
inline std::vector<std::string> split_fields(std::string_view text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t end = text.find(sep, start);
    parts.emplace_back(
        text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Levenshtein distance (insertions, deletions, substitutions of bytes).
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

// The candidate closest to `name` for a "did you mean" hint: at most 2 edits and fewer than
// half of name's length; "" when none is that close. Ties go to the earlier candidate.
inline std::string closest_name(std::string_view name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::min<size_t>(3, std::max<size_t>(1, (name.size() + 1) / 2));
  for (const std::string& c : candidates) {
    const size_t d = edit_distance(name, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

// Byte offset of the first byte that breaks UTF-8 (or a NUL), or npos when the text is clean.
inline size_t first_invalid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (c == 0 || len == 0 || (len == 2 && c < 0xC2) || i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

// ---- the TOML-like files of `fxt` (config files, sweep grids), line by line ----

// s without blanks (space, tab, CR) at either end.
inline std::string_view trim_blanks(std::string_view s) {
  auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// Walks `text` outside strings ("..." with backslash escapes, or '...'), calling on_char(i, c)
// for each character there; returns false when the text ends inside a string. on_char returns
// false to stop the walk.
template <typename OnChar>
bool walk_outside_strings(std::string_view text, OnChar on_char) {
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      if (c == '\\' && quote == '"')
        ++i;
      else if (c == quote)
        quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (!on_char(i, c)) {
      return true;
    }
  }
  return quote == 0;
}

// The line without its # comment (a # inside a string stays).
inline std::string_view strip_toml_comment(std::string_view line) {
  size_t end = line.size();
  walk_outside_strings(line, [&](size_t i, char c) {
    if (c != '#') return true;
    end = i;
    return false;
  });
  return line.substr(0, end);
}

// Open '[' minus ']' outside strings: > 0 while a multi-line array is unfinished. *closed_strings
// (optional): false when the text ends inside a string.
inline int toml_bracket_depth(std::string_view text, bool* closed_strings = nullptr) {
  int depth = 0;
  const bool closed = walk_outside_strings(text, [&](size_t, char c) {
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    return true;
  });
  if (closed_strings != nullptr) *closed_strings = closed;
  return depth;
}

}  // namespace fxt
