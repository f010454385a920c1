#include "core/file_util.h"

#include "core/temp_files.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fxt {
namespace {
constexpr size_t kBufferBytes = 1 << 20;
}

uint32_t crc32_update(uint32_t crc, const void* data, size_t size) {
  auto p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (size > 0) {
    auto chunk = static_cast<uInt>(std::min<size_t>(size, UINT_MAX));
    c = ::crc32(c, p, chunk);
    p += chunk;
    size -= chunk;
  }
  return static_cast<uint32_t>(c);
}

BufferedFileWriter::~BufferedFileWriter() {
  abandon();
}

BufferedFileWriter::BufferedFileWriter(BufferedFileWriter&& o) noexcept
    : file_(o.file_),
      path_(std::move(o.path_)),
      tmp_path_(std::move(o.tmp_path_)),
      buffer_(std::move(o.buffer_)),
      bytes_(o.bytes_),
      crc_(o.crc_) {
  o.file_ = nullptr;
}

BufferedFileWriter& BufferedFileWriter::operator=(BufferedFileWriter&& o) noexcept {
  if (this != &o) {
    abandon();
    file_ = o.file_;
    path_ = std::move(o.path_);
    tmp_path_ = std::move(o.tmp_path_);
    buffer_ = std::move(o.buffer_);
    bytes_ = o.bytes_;
    crc_ = o.crc_;
    o.file_ = nullptr;
  }
  return *this;
}

void BufferedFileWriter::abandon() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  std::filesystem::remove(tmp_path_, ec);
  if (tmp_path_ != path_) unregister_temp_path(tmp_path_);
}

Result<BufferedFileWriter> BufferedFileWriter::create(const std::string& path, bool atomic) {
  BufferedFileWriter w;
  w.path_ = path;
  w.tmp_path_ = atomic ? temp_name(path) : path;
  if (atomic) remove_stale_temps(path);  // left by a killed run (core/temp_files.h)
  w.file_ = std::fopen(w.tmp_path_.c_str(), "wb");
  if (w.file_ == nullptr) {
    // The user's path first: "/x/out.csv.tmp-4242: cannot create" named a file they never gave.
    if (!atomic) return IoError("{}: cannot create: {}", path, std::strerror(errno));
    return IoError("{}: cannot create its temporary file {}: {}", path, w.tmp_path_,
                   std::strerror(errno));
  }
  if (atomic) register_temp_path(w.tmp_path_);
  w.buffer_.reserve(kBufferBytes);
  return w;
}

Status BufferedFileWriter::flush_buffer() {
  if (buffer_.empty()) return Status::Ok();
  crc_ = crc32_update(crc_, buffer_.data(), buffer_.size());  // one pass per buffer, not per write
  if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size()) {
    return IoError("{}: write failed after {} bytes: {}", tmp_path_, bytes_, std::strerror(errno));
  }
  buffer_.clear();
  return Status::Ok();
}

Status BufferedFileWriter::write(const void* data, size_t size) {
  if (file_ == nullptr) return InternalError("{}: write after close", path_);
  bytes_ += size;
  auto p = static_cast<const uint8_t*>(data);
  if (buffer_.size() + size > kBufferBytes) FXT_RETURN_IF_ERROR(flush_buffer());
  if (size >= kBufferBytes) {
    crc_ = crc32_update(crc_, data, size);
    if (std::fwrite(p, 1, size, file_) != size) {
      return IoError("{}: write failed: {}", tmp_path_, std::strerror(errno));
    }
    return Status::Ok();
  }
  buffer_.insert(buffer_.end(), p, p + size);
  return Status::Ok();
}

Status BufferedFileWriter::commit() {
  if (file_ == nullptr) return InternalError("{}: commit after close", path_);
  FXT_RETURN_IF_ERROR(flush_buffer());
  if (std::fflush(file_) != 0 || ::fsync(::fileno(file_)) != 0) {
    return IoError("{}: flush failed: {}", tmp_path_, std::strerror(errno));
  }
  std::fclose(file_);
  file_ = nullptr;
  if (tmp_path_ == path_) return Status::Ok();
  const bool renamed = std::rename(tmp_path_.c_str(), path_.c_str()) == 0;
  const int err = errno;
  if (!renamed) {
    std::error_code ec;
    std::filesystem::remove(tmp_path_, ec);  // never leave the temporary behind
  }
  unregister_temp_path(tmp_path_);
  if (!renamed) return IoError("{}: cannot rename into place: {}", path_, std::strerror(err));
  return Status::Ok();
}

Result<std::string> read_file(const std::string& path) {
  // An ifstream opens a directory and then reads nothing: callers saw "empty file" or "no
  // lanes" for `--predictions DIR` / `--sweep DIR` (docs/ROBUSTNESS.md).
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidInput("{}: is a directory, expected a file", path);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!std::filesystem::exists(path)) return NotFound("{}: no such file", path);
    return IoError("{}: cannot open: {}", path, std::strerror(errno));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return IoError("{}: read failed: {}", path, std::strerror(errno));
  return ss.str();
}

Status write_file_atomic(const std::string& path, std::string_view contents) {
  FXT_ASSIGN_OR_RETURN(auto w, BufferedFileWriter::create(path, true));
  FXT_RETURN_IF_ERROR(w.write(contents));
  return w.commit();
}

Status fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return IoError("{}: cannot open directory: {}", dir, std::strerror(errno));
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) return IoError("{}: fsync failed: {}", dir, std::strerror(errno));
  return Status::Ok();
}

}  // namespace fxt
