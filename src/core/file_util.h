// Files written so that a killed process never leaves something that looks whole.
//
// BufferedFileWriter writes to "<path>.tmp-<pid>" with a large buffer and a
// running CRC32; commit() flushes, fsyncs and renames it into place. A writer
// destroyed without commit() removes its temporary file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fxt {

// CRC-32 (zlib polynomial) of a byte range, continuing from `crc`.
uint32_t crc32_update(uint32_t crc, const void* data, size_t size);

class BufferedFileWriter {
 public:
  BufferedFileWriter() = default;
  ~BufferedFileWriter();
  BufferedFileWriter(BufferedFileWriter&& o) noexcept;
  BufferedFileWriter& operator=(BufferedFileWriter&& o) noexcept;
  BufferedFileWriter(const BufferedFileWriter&) = delete;
  BufferedFileWriter& operator=(const BufferedFileWriter&) = delete;

  // atomic = true: write to a temporary name and rename on commit().
  static Result<BufferedFileWriter> create(const std::string& path, bool atomic = true);

  Status write(const void* data, size_t size);
  Status write(std::string_view s) { return write(s.data(), s.size()); }
  Status commit();  // flush, fsync, rename into place; the writer is closed afterwards

  uint64_t bytes_written() const { return bytes_; }
  // CRC32 of everything written so far (buffered bytes included).
  uint32_t crc32() const { return crc32_update(crc_, buffer_.data(), buffer_.size()); }
  const std::string& path() const { return path_; }

 private:
  Status flush_buffer();
  void abandon();

  std::FILE* file_ = nullptr;
  std::string path_, tmp_path_;
  std::vector<uint8_t> buffer_;
  uint64_t bytes_ = 0;
  uint32_t crc_ = 0;
};

// Whole-file helpers.
Result<std::string> read_file(const std::string& path);
Status write_file_atomic(const std::string& path, std::string_view contents);

// fsync a directory so that renames inside it are durable.
Status fsync_dir(const std::string& dir);

}  // namespace fxt
