#include "train/checkpoint.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/ranges.h>

#include "core/file_util.h"
#include "core/mapped_file.h"

namespace fxt {

static_assert(std::endian::native == std::endian::little,
              "checkpoints store tensors in host byte order, which must be little-endian");

namespace {

constexpr char kMagic[8] = {'F', 'X', 'T', 'C', 'K', 'P', 'T', '\0'};
constexpr uint64_t kHeaderBytes = 56;
constexpr uint64_t kHeaderCrcOffset = 48;  // the header CRC covers bytes [0, 48)

// The JSON sections, in file order.
constexpr const char* kSectionNames[] = {"config", "feature_stats", "controller", "optimizer",
                                         "meta"};
constexpr size_t kSectionCount = std::size(kSectionNames);

const nlohmann::json& section(const Checkpoint& c, size_t i) {
  const nlohmann::json* s[] = {&c.config, &c.feature_stats, &c.controller, &c.optimizer, &c.meta};
  return *s[i];
}
nlohmann::json& section(Checkpoint& c, size_t i) {
  nlohmann::json* s[] = {&c.config, &c.feature_stats, &c.controller, &c.optimizer, &c.meta};
  return *s[i];
}

uint64_t align8(uint64_t x) {
  return (x + 7) & ~uint64_t{7};
}

bool valid_dtype(uint8_t code) {
  return code >= 1 && code <= 4;
}

// Element count of a shape, or -1 on a negative dim or overflow past 2^62.
int64_t checked_numel(std::span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > (int64_t{1} << 62) / d) return -1;
    n *= d;
  }
  return n;
}

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

// First non-finite number inside `j`, as a JSON pointer ("" when none).
bool find_non_finite(const nlohmann::json& j, std::string& where) {
  if (j.is_number_float()) return !std::isfinite(j.get<double>());
  if (j.is_array()) {
    for (size_t i = 0; i < j.size(); ++i) {
      if (find_non_finite(j[i], where)) {
        where = fmt::format("/{}{}", i, where);
        return true;
      }
    }
  } else if (j.is_object()) {
    for (const auto& [k, v] : j.items()) {
      if (find_non_finite(v, where)) {
        where = fmt::format("/{}{}", k, where);
        return true;
      }
    }
  }
  return false;
}

std::string display(const std::string& source) {
  return source.empty() ? std::string("checkpoint") : source;
}

// Header and index bytes, plus where each tensor goes.
struct Layout {
  std::string head;  // header + index + zero padding up to data_offset
  std::vector<uint64_t> offsets;
  uint64_t file_bytes = 0;
};

Result<Layout> plan(const Checkpoint& c) {
  std::set<std::string_view> names;
  for (const NamedTensor& t : c.tensors) {
    if (t.name.empty()) return InvalidInput("a tensor has an empty name");
    if (t.name.size() > UINT16_MAX) {
      return InvalidInput("tensor name of {} bytes is too long", t.name.size());
    }
    if (!names.insert(t.name).second) {
      return InvalidInput("tensor '{}' appears twice", t.name);
    }
    if (!valid_dtype(static_cast<uint8_t>(t.dtype))) {
      return InvalidInput("tensor '{}': invalid dtype code {}", t.name, static_cast<int>(t.dtype));
    }
    if (t.shape.size() > kMaxTensorDims) {
      return InvalidInput("tensor '{}': {} dims, at most {}", t.name, t.shape.size(),
                          kMaxTensorDims);
    }
    int64_t n = checked_numel(t.shape);
    if (n < 0) {
      return InvalidInput("tensor '{}': invalid shape {}", t.name, shape_string(t.shape));
    }
    if (t.data.size() != static_cast<uint64_t>(n) * dtype_size(t.dtype)) {
      return InvalidInput("tensor '{}': {} data bytes, shape {} {} needs {}", t.name, t.data.size(),
                          shape_string(t.shape), dtype_name(t.dtype),
                          static_cast<uint64_t>(n) * dtype_size(t.dtype));
    }
  }

  std::string index;
  for (size_t i = 0; i < kSectionCount; ++i) {
    std::string where;
    if (find_non_finite(section(c, i), where)) {
      return InvalidInput("section '{}': non-finite number at '{}' (JSON cannot hold it)",
                          kSectionNames[i], where);
    }
    std::string text;
    try {
      text = section(c, i).dump();  // compact; object keys sorted, so deterministic
    } catch (const nlohmann::json::exception& e) {
      return InvalidInput("section '{}': {}", kSectionNames[i], e.what());
    }
    std::string_view name = kSectionNames[i];
    put<uint16_t>(index, static_cast<uint16_t>(name.size()));
    index += name;
    put<uint64_t>(index, text.size());
    index += text;
  }

  Layout l;
  // Tensor offsets depend on the index size, which does not depend on the offsets.
  uint64_t table_bytes = 0;
  for (const NamedTensor& t : c.tensors) {
    table_bytes += 2 + t.name.size() + 2 + 8 * t.shape.size() + 8 + 8 + 4;
  }
  uint64_t index_bytes = index.size() + table_bytes;
  uint64_t data_offset = align8(kHeaderBytes + index_bytes);
  uint64_t at = data_offset;
  for (const NamedTensor& t : c.tensors) {
    at = align8(at);
    l.offsets.push_back(at);
    put<uint16_t>(index, static_cast<uint16_t>(t.name.size()));
    index += t.name;
    put<uint8_t>(index, static_cast<uint8_t>(t.dtype));
    put<uint8_t>(index, static_cast<uint8_t>(t.shape.size()));
    for (int64_t d : t.shape) put<int64_t>(index, d);
    put<uint64_t>(index, at);
    put<uint64_t>(index, t.data.size());
    put<uint32_t>(index, crc32_update(0, t.data.data(), t.data.size()));
    at += t.data.size();
  }
  assert(index.size() == index_bytes);
  l.file_bytes = at;

  std::string& h = l.head;
  h.append(kMagic, sizeof(kMagic));
  put<uint32_t>(h, kCheckpointVersion);
  put<uint32_t>(h, static_cast<uint32_t>(kSectionCount));
  put<uint32_t>(h, static_cast<uint32_t>(c.tensors.size()));
  put<uint32_t>(h, crc32_update(0, index.data(), index.size()));
  put<uint64_t>(h, index_bytes);
  put<uint64_t>(h, data_offset);
  put<uint64_t>(h, l.file_bytes);
  put<uint32_t>(h, crc32_update(0, h.data(), kHeaderCrcOffset));
  put<uint32_t>(h, 0);  // reserved
  assert(h.size() == kHeaderBytes);
  h += index;
  h.resize(data_offset, '\0');
  return l;
}

// Writes the planned file through `sink(const void*, size_t) -> Status`.
template <typename Sink>
Status emit(const Checkpoint& c, const Layout& l, Sink&& sink) {
  static constexpr char kZeros[8] = {};
  FXT_RETURN_IF_ERROR(sink(l.head.data(), l.head.size()));
  uint64_t at = l.head.size();
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    FXT_RETURN_IF_ERROR(sink(kZeros, l.offsets[i] - at));
    FXT_RETURN_IF_ERROR(sink(c.tensors[i].data.data(), c.tensors[i].data.size()));
    at = l.offsets[i] + c.tensors[i].data.size();
  }
  assert(at == l.file_bytes);
  return Status::Ok();
}

// Bounds-checked little-endian reads from the index.
class Cursor {
 public:
  Cursor(std::string_view bytes, uint64_t base) : bytes_(bytes), base_(base) {}
  template <typename T>
  bool get(T& v) {
    if (bytes_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_bytes(uint64_t n, std::string_view& out) {
    if (bytes_.size() - pos_ < n) return false;
    out = bytes_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  uint64_t file_offset() const { return base_ + pos_; }
  bool at_end() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  uint64_t base_;  // file offset of bytes_[0]
  size_t pos_ = 0;
};

template <typename T>
Result<std::vector<T>> copy_out(const NamedTensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

void set_raw(Checkpoint& c, std::string_view name, DType dtype, std::vector<int64_t> shape,
             const void* values, size_t count) {
  NamedTensor t;
  t.name = std::string(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  assert(checked_numel(t.shape) == static_cast<int64_t>(count));
  t.data.resize(count * dtype_size(dtype));
  if (count > 0) std::memcpy(t.data.data(), values, t.data.size());
  c.set_tensor(std::move(t));
}

// "'a', 'b', 'c' (and 4 more)"
std::string name_list(const std::vector<std::string>& names) {
  constexpr size_t kShown = 8;
  std::string s;
  for (size_t i = 0; i < std::min(names.size(), kShown); ++i) {
    s += fmt::format("{}'{}'", i > 0 ? ", " : "", names[i]);
  }
  if (names.size() > kShown) s += fmt::format(" (and {} more)", names.size() - kShown);
  return s;
}

}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kU8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kI64:
      return "i64";
    case DType::kU8:
      return "u8";
  }
  return "invalid";
}

std::string shape_string(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ","));
}

int64_t NamedTensor::numel() const {
  return checked_numel(shape);
}

void Checkpoint::set_tensor(NamedTensor t) {
  for (NamedTensor& existing : tensors) {
    if (existing.name == t.name) {
      existing = std::move(t);
      return;
    }
  }
  tensors.push_back(std::move(t));
}

void Checkpoint::set_f32(std::string_view name, std::vector<int64_t> shape,
                         std::span<const float> values) {
  set_raw(*this, name, DType::kF32, std::move(shape), values.data(), values.size());
}
void Checkpoint::set_f64(std::string_view name, std::vector<int64_t> shape,
                         std::span<const double> values) {
  set_raw(*this, name, DType::kF64, std::move(shape), values.data(), values.size());
}
void Checkpoint::set_i64(std::string_view name, std::vector<int64_t> shape,
                         std::span<const int64_t> values) {
  set_raw(*this, name, DType::kI64, std::move(shape), values.data(), values.size());
}
void Checkpoint::set_u8(std::string_view name, std::vector<int64_t> shape,
                        std::span<const uint8_t> values) {
  set_raw(*this, name, DType::kU8, std::move(shape), values.data(), values.size());
}

const NamedTensor* Checkpoint::find(std::string_view name) const {
  for (const NamedTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string Checkpoint::where() const {
  return display(source);
}

Result<int64_t> Checkpoint::meta_int(std::string_view section, std::string_view key, int64_t lo,
                                     int64_t hi) const {
  const auto s = meta.find(section);
  if (s == meta.end() || !s->is_object() || !s->contains(key) || !(*s)[key].is_number_integer())
    return InvalidInput("{}: meta.{}.{}: missing or not an integer", where(), section, key);
  const int64_t v = (*s)[key].get<int64_t>();
  if (v < lo || v > hi)
    return InvalidInput("{}: meta.{}.{} = {}: expected {} to {}", where(), section, key, v, lo, hi);
  return v;
}

Result<const NamedTensor*> Checkpoint::checked(std::string_view name, DType dtype,
                                               std::span<const int64_t> shape,
                                               bool check_shape) const {
  const NamedTensor* t = find(name);
  if (t == nullptr) return InvalidInput("{}: tensor '{}': not found", display(source), name);
  if (t->dtype != dtype) {
    return InvalidInput("{}: tensor '{}': dtype {}, expected {}", display(source), name,
                        dtype_name(t->dtype), dtype_name(dtype));
  }
  if (check_shape && !std::equal(t->shape.begin(), t->shape.end(), shape.begin(), shape.end())) {
    return InvalidInput("{}: tensor '{}': shape {}, expected {}", display(source), name,
                        shape_string(t->shape), shape_string(shape));
  }
  return t;
}

Result<std::vector<float>> Checkpoint::get_f32(std::string_view name,
                                               std::span<const int64_t> shape) const {
  FXT_ASSIGN_OR_RETURN(const NamedTensor* t, checked(name, DType::kF32, shape, !shape.empty()));
  return copy_out<float>(*t);
}
Result<std::vector<double>> Checkpoint::get_f64(std::string_view name,
                                                std::span<const int64_t> shape) const {
  FXT_ASSIGN_OR_RETURN(const NamedTensor* t, checked(name, DType::kF64, shape, !shape.empty()));
  return copy_out<double>(*t);
}
Result<std::vector<int64_t>> Checkpoint::get_i64(std::string_view name,
                                                 std::span<const int64_t> shape) const {
  FXT_ASSIGN_OR_RETURN(const NamedTensor* t, checked(name, DType::kI64, shape, !shape.empty()));
  return copy_out<int64_t>(*t);
}

Status Checkpoint::read_f32_into(std::string_view name, std::span<const int64_t> shape,
                                 std::span<float> out) const {
  FXT_ASSIGN_OR_RETURN(const NamedTensor* t, checked(name, DType::kF32, shape, true));
  if (out.size() * sizeof(float) != t->data.size()) {
    return InternalError("{}: tensor '{}': destination holds {} floats, tensor has {}",
                         display(source), name, out.size(), t->data.size() / sizeof(float));
  }
  if (!out.empty()) std::memcpy(out.data(), t->data.data(), t->data.size());
  return Status::Ok();
}

Result<std::string> serialize_checkpoint(const Checkpoint& ckpt) {
  auto planned = plan(ckpt);
  if (!planned.ok())
    return Status(planned.status().code(), "checkpoint: " + planned.status().message());
  const Layout& l = *planned;
  std::string out;
  out.reserve(l.file_bytes);
  FXT_RETURN_IF_ERROR(emit(ckpt, l, [&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return Status::Ok();
  }));
  return out;
}

Status write_checkpoint(const std::string& path, const Checkpoint& ckpt) {
  auto planned = plan(ckpt);
  if (!planned.ok()) return {planned.status().code(), path + ": " + planned.status().message()};
  FXT_ASSIGN_OR_RETURN(BufferedFileWriter w, BufferedFileWriter::create(path, true));
  FXT_RETURN_IF_ERROR(emit(ckpt, *planned, [&](const void* p, size_t n) { return w.write(p, n); }));
  FXT_RETURN_IF_ERROR(w.commit());
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return fsync_dir(dir.empty() ? std::string(".") : dir.string());
}

Result<Checkpoint> read_checkpoint(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(MappedFile f, MappedFile::open(path));
  return parse_checkpoint(f.view(), path);
}

namespace {
// Valid CRCs only say the bytes are the ones written: a diverged run writes NaN faithfully.
// Every floating-point tensor must be finite to be loaded.
template <typename T>
int64_t first_non_finite(const NamedTensor& t) {
  const int64_t n = t.numel();
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, t.data.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
    if (!std::isfinite(v)) return i;
  }
  return -1;
}
}  // namespace

Status check_finite(const NamedTensor& t, const std::string& where) {
  int64_t bad = -1;
  if (t.dtype == DType::kF32) bad = first_non_finite<float>(t);
  if (t.dtype == DType::kF64) bad = first_non_finite<double>(t);
  if (bad < 0) return Status::Ok();
  return InvalidInput("{}: tensor '{}': element {} is not finite (NaN or inf): a diverged run?",
                      where, t.name, bad);
}

Result<Checkpoint> parse_checkpoint(std::string_view bytes, const std::string& name) {
  const std::string& n = name;
  const uint64_t size = bytes.size();
  if (size == 0 || std::memcmp(bytes.data(), kMagic, std::min<size_t>(size, 8)) != 0) {
    return InvalidInput("{}: not a foxhunt checkpoint (bad magic)", n);
  }
  if (size < kHeaderBytes) {
    return InvalidInput("{}: truncated: {} bytes, shorter than the {}-byte header", n, size,
                        kHeaderBytes);
  }
  Cursor hc(bytes.substr(0, kHeaderBytes), 0);
  std::string_view magic;
  uint32_t version = 0, section_count = 0, tensor_count = 0, index_crc = 0, header_crc = 0;
  uint64_t index_bytes = 0, data_offset = 0, file_bytes = 0;
  hc.get_bytes(8, magic);
  hc.get(version);
  if (version > kCheckpointVersion) {
    return InvalidInput("{}: format version {} is newer than this build reads ({})", n, version,
                        kCheckpointVersion);
  }
  if (version == 0) return InvalidInput("{}: format version 0 is not valid", n);
  hc.get(section_count);
  hc.get(tensor_count);
  hc.get(index_crc);
  hc.get(index_bytes);
  hc.get(data_offset);
  hc.get(file_bytes);
  hc.get(header_crc);
  if (crc32_update(0, bytes.data(), kHeaderCrcOffset) != header_crc) {
    return InvalidInput("{}: header CRC32 mismatch (corrupt file)", n);
  }
  if (size < file_bytes) {
    return InvalidInput("{}: truncated: {} bytes, header says {}", n, size, file_bytes);
  }
  if (size > file_bytes) {
    return InvalidInput("{}: {} bytes, header says {} (trailing data)", n, size, file_bytes);
  }
  if (index_bytes > file_bytes - kHeaderBytes ||
      data_offset != align8(kHeaderBytes + index_bytes) || data_offset > file_bytes) {
    return InvalidInput("{}: index of {} bytes and data offset {} do not fit a {}-byte file", n,
                        index_bytes, data_offset, file_bytes);
  }
  std::string_view index = bytes.substr(kHeaderBytes, index_bytes);
  if (crc32_update(0, index.data(), index.size()) != index_crc) {
    return InvalidInput("{}: index CRC32 mismatch (corrupt file)", n);
  }

  Checkpoint c;
  c.source = name;
  Cursor cur(index, kHeaderBytes);
  std::vector<bool> seen(kSectionCount, false);
  for (uint32_t s = 0; s < section_count; ++s) {
    uint16_t name_len = 0;
    uint64_t json_len = 0;
    std::string_view sname, text;
    if (!cur.get(name_len) || !cur.get_bytes(name_len, sname) || !cur.get(json_len) ||
        !cur.get_bytes(json_len, text)) {
      return InvalidInput("{}: index ends inside section #{}", n, s);
    }
    auto it = std::find(std::begin(kSectionNames), std::end(kSectionNames), sname);
    if (it == std::end(kSectionNames)) {
      return InvalidInput("{}: unknown section '{}'", n, sname);
    }
    auto i = static_cast<size_t>(it - std::begin(kSectionNames));
    if (seen[i]) return InvalidInput("{}: section '{}' appears twice", n, sname);
    seen[i] = true;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return InvalidInput("{}: section '{}': invalid JSON", n, sname);
    section(c, i) = std::move(j);
  }
  for (size_t i = 0; i < kSectionCount; ++i) {
    if (!seen[i]) return InvalidInput("{}: section '{}' is missing", n, kSectionNames[i]);
  }

  uint64_t data_end = data_offset;  // tensors are in file order and do not overlap
  std::set<std::string, std::less<>> names;
  c.tensors.reserve(tensor_count);
  for (uint32_t k = 0; k < tensor_count; ++k) {
    uint16_t name_len = 0;
    std::string_view tname;
    if (!cur.get(name_len) || !cur.get_bytes(name_len, tname)) {
      return InvalidInput("{}: index ends inside the entry of tensor #{}", n, k);
    }
    NamedTensor t;
    t.name = std::string(tname);
    uint8_t dtype = 0, ndim = 0;
    uint64_t offset = 0, nbytes = 0;
    uint32_t crc = 0;
    if (!cur.get(dtype) || !cur.get(ndim)) {
      return InvalidInput("{}: tensor '{}': index ends inside its entry", n, t.name);
    }
    if (t.name.empty()) return InvalidInput("{}: tensor #{} has an empty name", n, k);
    if (!names.insert(t.name).second) {
      return InvalidInput("{}: tensor '{}' appears twice", n, t.name);
    }
    if (!valid_dtype(dtype)) {
      return InvalidInput("{}: tensor '{}': unknown dtype code {}", n, t.name, dtype);
    }
    t.dtype = static_cast<DType>(dtype);
    if (ndim > kMaxTensorDims) {
      return InvalidInput("{}: tensor '{}': {} dims, at most {}", n, t.name, ndim, kMaxTensorDims);
    }
    t.shape.resize(ndim);
    for (int64_t& d : t.shape) {
      if (!cur.get(d))
        return InvalidInput("{}: tensor '{}': index ends inside its entry", n, t.name);
    }
    if (!cur.get(offset) || !cur.get(nbytes) || !cur.get(crc)) {
      return InvalidInput("{}: tensor '{}': index ends inside its entry", n, t.name);
    }
    int64_t numel = checked_numel(t.shape);
    if (numel < 0) {
      return InvalidInput("{}: tensor '{}': invalid shape {}", n, t.name, shape_string(t.shape));
    }
    if (nbytes != static_cast<uint64_t>(numel) * dtype_size(t.dtype)) {
      return InvalidInput("{}: tensor '{}': {} bytes, but shape {} {} needs {}", n, t.name, nbytes,
                          shape_string(t.shape), dtype_name(t.dtype),
                          static_cast<uint64_t>(numel) * dtype_size(t.dtype));
    }
    if (offset % 8 != 0 || offset < data_end || offset > file_bytes ||
        nbytes > file_bytes - offset) {
      return InvalidInput(
          "{}: tensor '{}': bytes [{}, +{}) out of bounds (data region [{}, {}), previous tensor "
          "ends at {}, 8-byte aligned)",
          n, t.name, offset, nbytes, data_offset, file_bytes, data_end);
    }
    const char* p = bytes.data() + offset;
    if (crc32_update(0, p, nbytes) != crc) {
      return InvalidInput("{}: tensor '{}': CRC32 mismatch (corrupt file)", n, t.name);
    }
    t.data.assign(reinterpret_cast<const uint8_t*>(p),
                  reinterpret_cast<const uint8_t*>(p) + nbytes);
    FXT_RETURN_IF_ERROR(check_finite(t, n));
    data_end = offset + nbytes;
    c.tensors.push_back(std::move(t));
  }
  if (!cur.at_end()) {
    return InvalidInput("{}: {} unread bytes at the end of the index (at byte {})", n,
                        index_bytes - (cur.file_offset() - kHeaderBytes), cur.file_offset());
  }
  return c;
}

Status expect_tensor(const Checkpoint& ckpt, std::string_view name, DType dtype,
                     std::span<const int64_t> shape) {
  auto t = [&]() -> Result<const NamedTensor*> {
    const NamedTensor* found = ckpt.find(name);
    if (found == nullptr) {
      return InvalidInput("{}: tensor '{}': not found", display(ckpt.source), name);
    }
    return found;
  }();
  if (!t.ok()) return t.status();
  const NamedTensor& x = **t;
  bool same_shape = std::equal(x.shape.begin(), x.shape.end(), shape.begin(), shape.end());
  if (x.dtype != dtype || !same_shape) {
    std::string what;
    if (x.dtype != dtype)
      what += fmt::format("dtype {}, expected {}", dtype_name(x.dtype), dtype_name(dtype));
    if (!same_shape) {
      what += fmt::format("{}shape {}, expected {}", what.empty() ? "" : "; ",
                          shape_string(x.shape), shape_string(shape));
    }
    return InvalidInput("{}: tensor '{}': {}", display(ckpt.source), name, what);
  }
  return Status::Ok();
}

Status check_compatible(const Checkpoint& expected, const Checkpoint& loaded) {
  std::map<std::string_view, const NamedTensor*> have;
  for (const NamedTensor& t : loaded.tensors) have[t.name] = &t;
  std::vector<std::string> missing, unexpected, differ;
  for (const NamedTensor& e : expected.tensors) {
    auto it = have.find(e.name);
    if (it == have.end()) {
      missing.push_back(e.name);
      continue;
    }
    const NamedTensor& l = *it->second;
    if (l.dtype != e.dtype) {
      differ.push_back(fmt::format("'{}' dtype {} vs expected {}", e.name, dtype_name(l.dtype),
                                   dtype_name(e.dtype)));
    }
    if (l.shape != e.shape) {
      differ.push_back(fmt::format("'{}' shape {} vs expected {}", e.name, shape_string(l.shape),
                                   shape_string(e.shape)));
    }
    have.erase(it);
  }
  for (const NamedTensor& t : loaded.tensors) {
    if (have.count(t.name) != 0) unexpected.push_back(t.name);  // file order
  }
  if (missing.empty() && unexpected.empty() && differ.empty()) return Status::Ok();
  std::vector<std::string> parts;
  if (!missing.empty()) parts.push_back("missing tensors " + name_list(missing));
  if (!unexpected.empty()) parts.push_back("unexpected tensors " + name_list(unexpected));
  constexpr size_t kShown = 8;
  for (size_t i = 0; i < std::min(differ.size(), kShown); ++i) parts.push_back(differ[i]);
  if (differ.size() > kShown)
    parts.push_back(fmt::format("{} more differences", differ.size() - kShown));
  return InvalidInput("{}: does not match the model: {}", display(loaded.source),
                      fmt::format("{}", fmt::join(parts, "; ")));
}

}  // namespace fxt
