// Reading a text file line by line, plain or gzip-compressed (zlib reads both), in chunks:
// the one line reader of the text sources (Binance captures, Tardis.dev CSV).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"

namespace fxt {

// Calls fn(line, line_no) for every line (without its '\n'; line_no from 1) and stops at the
// first error fn returns. A corrupt or truncated gzip stream is an error naming the line
// after which it happened.
Status for_each_line(const std::string& path,
                     const std::function<Status(std::string_view line, uint64_t line_no)>& fn);

}  // namespace fxt
