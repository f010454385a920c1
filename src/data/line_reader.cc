#include "data/line_reader.h"

#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <vector>

namespace fxt {

Status for_each_line(const std::string& path,
                     const std::function<Status(std::string_view line, uint64_t line_no)>& fn) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) {
    if (errno == ENOENT) return NotFound("{}: no such file", path);
    return IoError("{}: cannot open: {}", path, std::strerror(errno));
  }
  gzbuffer(f, 1 << 18);
  // Chunked reads split on '\n'; the buffer doubles for a line longer than itself.
  std::vector<char> buf(size_t{1} << 20);
  size_t have = 0;
  uint64_t line_no = 0;
  Status status;
  for (;;) {
    if (have == buf.size()) buf.resize(buf.size() * 2);
    const unsigned want = static_cast<unsigned>(std::min<size_t>(buf.size() - have, INT_MAX));
    const int n = gzread(f, buf.data() + have, want);
    if (n < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      status = InvalidInput("{}: corrupt or truncated gzip after line {}: {}", path, line_no,
                            msg != nullptr ? msg : "?");
      break;
    }
    const bool eof = n == 0;
    have += static_cast<size_t>(n);
    size_t pos = 0;
    while (pos < have) {
      const void* nl = std::memchr(buf.data() + pos, '\n', have - pos);
      if (nl == nullptr) break;
      const size_t end = static_cast<size_t>(static_cast<const char*>(nl) - buf.data());
      status = fn(std::string_view(buf.data() + pos, end - pos), ++line_no);
      if (!status.ok()) break;
      pos = end + 1;
    }
    if (!status.ok()) break;
    if (eof) {
      // zlib reports a stream cut short (Z_BUF_ERROR) only at the end: say so rather than
      // complain about the partial last line.
      int errnum = Z_OK;
      const char* msg = gzerror(f, &errnum);
      if (errnum != Z_OK && errnum != Z_STREAM_END) {
        status = InvalidInput(
            "{}: corrupt or truncated gzip after line {}: {}", path, line_no,
            errnum == Z_BUF_ERROR ? "unexpected end of file" : (msg != nullptr ? msg : "?"));
        break;
      }
      if (pos < have) status = fn(std::string_view(buf.data() + pos, have - pos), ++line_no);
      break;
    }
    std::memmove(buf.data(), buf.data() + pos, have - pos);
    have -= pos;
  }
  gzclose(f);
  return status;
}

}  // namespace fxt
