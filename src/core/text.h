// Small text helpers shared by the command-line parsers.
#pragma once

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

}  // namespace fxt
