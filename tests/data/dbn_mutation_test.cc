// Deterministic mutation test of the DBN reader: every shared fixture, truncated at every
// offset, bit-flipped, overwritten and given absurd lengths. The reader must never crash or
// read out of bounds (the sanitizer build runs this), must always terminate, and every failure
// must be a non-OK status whose one-line message names the input and a byte offset.
#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "data/dbn.h"
#include "test_util.h"

namespace fxt::dbn {
namespace {

namespace fs = std::filesystem;

struct Tally {
  size_t inputs = 0;
  size_t ok = 0;
  size_t errors = 0;
  size_t records = 0;
};

void expect_good_error(const Status& s, const std::string& name, const char* what) {
  EXPECT_FALSE(s.ok());
  const std::string& m = s.message();
  EXPECT_EQ(m.rfind(name + ": offset ", 0), 0u) << what << ": " << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << what << ": " << m;
}

// Opens and drains one input, touching every byte each record claims to own.
void run_one(const std::string& bytes, ReaderOptions options, const char* what, Tally* t) {
  static const std::string kName = "mutant.dbn";
  ++t->inputs;
  auto r = Reader::open_memory(kName, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(),
                               options);
  if (!r.ok()) {
    ++t->errors;
    expect_good_error(r.status(), kName, what);
    return;
  }
  RecordRef rec;
  size_t n = 0;
  uint64_t checksum = 0;
  const size_t limit = size_t{1} << 22;  // far more than any mutant can hold
  while (r->next(&rec)) {
    ASSERT_LT(++n, limit) << what << ": reader does not terminate";
    ASSERT_GE(rec.size(), sizeof(RecordHeader));
    const auto* p = reinterpret_cast<const uint8_t*>(rec.header);
    checksum += p[0] + p[rec.size() - 1];
    if (rec.rtype() == kRTypeDefinition) {
      auto def = r->decode_definition(rec);
      if (def.ok()) {
        checksum += def->raw_symbol.size();
      } else {
        expect_good_error(def.status(), kName, what);
      }
    }
  }
  t->records += n + (checksum & 0);
  if (r->status().ok()) {
    ++t->ok;
  } else {
    ++t->errors;
    expect_good_error(r->status(), kName, what);
  }
}

std::string compress(const std::string& plain) {
  static ZSTD_CCtx* cctx = ZSTD_createCCtx();  // one context: creating them dominates ASan time
  std::string out(ZSTD_compressBound(plain.size()), '\0');
  size_t n = ZSTD_compressCCtx(cctx, out.data(), out.size(), plain.data(), plain.size(), 1);
  EXPECT_FALSE(ZSTD_isError(n));
  out.resize(ZSTD_isError(n) ? 0 : n);
  return out;
}

std::string decompress(const std::string& z) {
  std::string out;
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_inBuffer in{z.data(), z.size(), 0};
  std::vector<char> buf(1 << 16);
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    size_t r = ZSTD_decompressStream(d, &o, &in);
    if (ZSTD_isError(r)) break;
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

void put_u32(std::string* b, size_t at, uint32_t v) {
  if (at + 4 <= b->size()) std::memcpy(b->data() + at, &v, 4);
}

// The mutations of one base input (plain or compressed bytes). Compressed inputs mostly
// exercise libzstd's own checks, and each costs a decoder context (slow under ASan), so they
// get bit flips at every `flip_stride`-th byte only.
void mutate_all(const std::string& base, ReaderOptions options, std::mt19937* rng, bool plain,
                size_t flip_stride, Tally* t) {
  run_one(base, options, "original", t);
  for (size_t cut = 0; cut < base.size(); ++cut) {
    run_one(base.substr(0, cut), options, "truncated", t);
  }
  for (size_t i = 0; i < base.size(); i += (i < 16 ? 1 : flip_stride)) {
    std::string b = base;
    b[i] = static_cast<char>(b[i] ^ (1 << ((*rng)() % 8)));
    run_one(b, options, "bit flip", t);
  }
  for (int k = 0; k < (plain ? 64 : 16); ++k) {
    std::string b = base;
    int n = 1 + static_cast<int>((*rng)() % 8);
    for (int j = 0; j < n && !b.empty(); ++j) {
      static const uint8_t kValues[] = {0x00, 0xFF, 0x7F, 0x80, 0x01, 0x13, 0x0A, 0xA0};
      uint32_t pick = static_cast<uint32_t>((*rng)());
      b[pick % b.size()] = static_cast<char>((pick >> 16) % 2 ? kValues[(pick >> 8) % 8]
                                                              : static_cast<uint8_t>(pick >> 8));
    }
    run_one(b, options, "overwrite", t);
  }
  if (!plain || base.size() < 8 || base.compare(0, 3, "DBN") != 0) return;

  // Structural mutations of a DBN file with metadata.
  std::string b = base;
  b[0] = 'X';
  run_one(b, options, "wrong magic", t);
  for (uint8_t v : {uint8_t{0}, uint8_t{4}, uint8_t{0xFF}}) {
    b = base;
    b[3] = static_cast<char>(v);
    run_one(b, options, "wrong version", t);
  }
  uint32_t md_len;
  std::memcpy(&md_len, base.data() + 4, 4);
  for (uint32_t len : {0u, 1u, 103u, 104u, md_len - 1, md_len + 1, md_len + 4,
                       static_cast<uint32_t>(base.size()), 0x7FFFFFFFu, 0xFFFFFFFFu}) {
    b = base;
    put_u32(&b, 4, len);
    run_one(b, options, "metadata length", t);
  }
  size_t fixed_end = 8 + 100;
  // symbol_cstr_len (v2/v3) and the list counts.
  for (uint32_t count : {1u, 2u, 1000u, 0x00FFFFFFu, 0xFFFFFFFFu}) {
    for (size_t at : {fixed_end + 4, fixed_end + 8}) {
      b = base;
      put_u32(&b, at, count);
      run_one(b, options, "list count", t);
    }
  }
  if (base[3] != 1) {
    for (uint16_t cstr : {uint16_t{0}, uint16_t{1}, uint16_t{22}, uint16_t{0xFFFF}}) {
      b = base;
      std::memcpy(b.data() + 8 + 53, &cstr, 2);
      run_one(b, options, "symbol_cstr_len", t);
    }
  }
  size_t first = 8 + size_t{md_len};
  for (uint8_t len : {uint8_t{0}, uint8_t{1}, uint8_t{3}, uint8_t{4}, uint8_t{5}, uint8_t{12},
                      uint8_t{91}, uint8_t{255}}) {
    if (first >= base.size()) break;
    b = base;
    b[first] = static_cast<char>(len);
    run_one(b, options, "record length", t);
    run_one(compress(b), options, "record length (zstd)", t);
  }
  run_one(std::string(), options, "empty", t);
  // The same content through the zstd path: truncated and split into two frames.
  for (size_t cut = 0; cut <= base.size(); cut += 29) {
    run_one(compress(base.substr(0, cut)), options, "zstd of truncated", t);
    run_one(compress(base.substr(0, cut)) + compress(base.substr(cut)), options, "two frames", t);
  }
}

std::vector<std::string> fixture_files() {
  std::vector<std::string> files;
  std::string root = test::shared_file("dbn-fixtures");
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(root, ec)) {
    if (e.is_regular_file()) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

uint8_t fragment_version(const std::string& path) {
  if (path.find(".frag") == std::string::npos) return 0;
  if (path.find(".v1.") != std::string::npos) return 1;
  if (path.find(".v3.") != std::string::npos) return 3;
  return 2;
}

TEST(DbnMutation, EveryFixtureSurvivesEveryMutation) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::mt19937 rng(20240805);
  Tally t;
  std::vector<std::string> files = fixture_files();
  ASSERT_GE(files.size(), 60u);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    auto bytes = read_file(path);
    ASSERT_TRUE(bytes.ok());
    ReaderOptions options{fragment_version(path)};
    bool zst = path.ends_with(".zst");
    mutate_all(*bytes, options, &rng, !zst, zst ? 6 : 1, &t);
    if (zst) mutate_all(decompress(*bytes), options, &rng, true, 1, &t);
    if (options.fragment_version != 0) {
      // A fragment read with the wrong version, and without one.
      for (uint8_t v : {uint8_t{0}, uint8_t{1}, uint8_t{2}, uint8_t{3}}) {
        run_one(*bytes, ReaderOptions{v}, "fragment version", &t);
      }
    }
  }
  fmt::print("dbn mutation: {} inputs, {} clean, {} errors, {} records\n", t.inputs, t.ok, t.errors,
             t.records);
  EXPECT_GT(t.errors, t.inputs / 2);
  EXPECT_GT(t.ok, 0u);
}

}  // namespace
}  // namespace fxt::dbn
