// Checkpoints (DESIGN §5.2): one self-checking file holding everything needed to resume
// or evaluate a run.
//
// A Checkpoint is five small JSON sections — config, feature statistics, controller
// state, optimizer state (step counter, hyper-parameters) and free-form meta — plus a
// list of named tensors (model parameters, Adam moments, and any state that must resume
// bit for bit). The byte layout is in docs/CHECKPOINT.md.
//
// write_checkpoint() is atomic (temporary name, fsync, rename) and deterministic: the
// same Checkpoint always gives the same bytes (no timestamps; JSON keys sorted).
// read_checkpoint() verifies the magic, version, header and index checksums, the bounds
// of every offset and length and the CRC32 of every tensor, and reports the first
// problem in one line naming the file and the tensor. check_compatible() compares a
// loaded checkpoint with the layout a model expects and lists every difference.
//
// Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt {

inline constexpr uint32_t kCheckpointVersion = 1;
inline constexpr int kMaxTensorDims = 4;

// Values are the on-disk codes.
enum class DType : uint8_t { kF32 = 1, kF64 = 2, kI64 = 3, kU8 = 4 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "f64", "i64", "u8"

// "[3,4]" (and "[]" for a scalar).
std::string shape_string(std::span<const int64_t> shape);

struct NamedTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // 0..4 dims; a scalar has no dims and one element
  std::vector<uint8_t> data;   // little-endian, row-major; numel() * dtype_size(dtype) bytes

  int64_t numel() const;
};

// InvalidInput naming `where` and the first NaN or inf element of an f32/f64 tensor;
// read_checkpoint() applies it to every tensor.
Status check_finite(const NamedTensor& t, const std::string& where);

class Checkpoint {
 public:
  // Tensor-name conventions (docs/CHECKPOINT.md): model parameters under their own
  // names; Adam moments as "adam.m/<param>" and "adam.v/<param>".
  static std::string adam_m_name(std::string_view param) { return "adam.m/" + std::string(param); }
  static std::string adam_v_name(std::string_view param) { return "adam.v/" + std::string(param); }

  nlohmann::json config = nlohmann::json::object();         // the run configuration
  nlohmann::json feature_stats = nlohmann::json::object();  // normalisation mean/std per feature
  nlohmann::json controller = nlohmann::json::object();     // horizon weighting, λ (DESIGN §4)
  nlohmann::json optimizer = nlohmann::json::object();      // step counter, hyper-parameters
  nlohmann::json meta = nlohmann::json::object();           // anything else small
  std::vector<NamedTensor> tensors;                         // in file order

  // Where this checkpoint was read from ("" when built in memory); used in messages.
  std::string source;
  // The source, or "checkpoint" for one built in memory: how messages name it.
  std::string where() const;

  // Add or replace a tensor. `values` must hold the product of `shape` elements
  // (asserted: a programmer error).
  void set_f32(std::string_view name, std::vector<int64_t> shape, std::span<const float> values);
  void set_f64(std::string_view name, std::vector<int64_t> shape, std::span<const double> values);
  void set_i64(std::string_view name, std::vector<int64_t> shape, std::span<const int64_t> values);
  void set_u8(std::string_view name, std::vector<int64_t> shape, std::span<const uint8_t> values);
  void set_tensor(NamedTensor t);

  const NamedTensor* find(std::string_view name) const;

  // Copy a tensor out, checking its dtype and (when `shape` is given) its shape.
  Result<std::vector<float>> get_f32(std::string_view name,
                                     std::span<const int64_t> shape = {}) const;
  Result<std::vector<double>> get_f64(std::string_view name,
                                      std::span<const int64_t> shape = {}) const;
  Result<std::vector<int64_t>> get_i64(std::string_view name,
                                       std::span<const int64_t> shape = {}) const;
  // Into caller-owned storage (e.g. a model's parameter buffer) of exactly numel elements.
  Status read_f32_into(std::string_view name, std::span<const int64_t> shape,
                       std::span<float> out) const;
  // meta[section][key] as an integer in [lo, hi]; InvalidInput naming the file and the key.
  Result<int64_t> meta_int(std::string_view section, std::string_view key, int64_t lo,
                           int64_t hi) const;

 private:
  Result<const NamedTensor*> checked(std::string_view name, DType dtype,
                                     std::span<const int64_t> shape, bool check_shape) const;
};

// Writes `path` atomically. Fails (leaving any existing file untouched) on an invalid
// checkpoint: empty or duplicate tensor names, more than 4 dims, negative dims, a data
// size that does not match the shape, or a non-finite number inside a JSON section.
Status write_checkpoint(const std::string& path, const Checkpoint& ckpt);

// The exact bytes write_checkpoint() would write.
Result<std::string> serialize_checkpoint(const Checkpoint& ckpt);

Result<Checkpoint> read_checkpoint(const std::string& path);
// Parses bytes already in memory; `name` is used in messages.
Result<Checkpoint> parse_checkpoint(std::string_view bytes, const std::string& name);

// A tensor with this name, dtype and shape, or an error saying what differs.
Status expect_tensor(const Checkpoint& ckpt, std::string_view name, DType dtype,
                     std::span<const int64_t> shape);

// Every tensor of `expected` (the layout a model needs; data may be empty) must be in
// `loaded` with the same dtype and shape, and `loaded` must hold nothing else. The error
// lists missing names, unexpected names and every dtype/shape difference, in one line.
Status check_compatible(const Checkpoint& expected, const Checkpoint& loaded);

}  // namespace fxt
