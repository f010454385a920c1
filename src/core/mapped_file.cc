#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace fxt {

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : data_(o.data_), size_(o.size_), path_(std::move(o.path_)) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
    data_ = o.data_;
    size_ = o.size_;
    path_ = std::move(o.path_);
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

Result<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound("{}: no such file", path);
    return IoError("{}: cannot open: {}", path, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return IoError("{}: cannot stat: {}", path, std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return InvalidInput("{}: is a directory, expected a file", path);
  }
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(st.st_size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return IoError("{}: cannot map {} bytes: {}", path, f.size_, std::strerror(err));
    }
    ::madvise(p, f.size_, MADV_SEQUENTIAL);
    f.data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);
  return f;
}

}  // namespace fxt
