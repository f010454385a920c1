#include "data/dbn.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/file_util.h"
#include "core/mapped_file.h"

namespace fxt::dbn {
namespace {

constexpr uint32_t kZstdMagic = 0xFD2FB528;
constexpr uint32_t kSkippableMagic = 0x184D2A50;  // ..5F: a legacy .dbz starts with one
constexpr size_t kPreludeLen = 8;
constexpr size_t kMetadataFixedLen = 100;  // dataset .. reserved, identical size in v1-v3
constexpr size_t kSymbolCstrLenV1 = 22;
constexpr size_t kSymbolCstrLenV2 = 71;
constexpr size_t kMinZstdBuffer = 64 << 10;  // small inputs: the window grows if needed
constexpr size_t kZstdBuffer = 4 << 20;      // decompressed window; records are handed out from it
constexpr size_t kWriterStage = 1 << 20;

template <typename T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(uint8_t* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// A fixed-length, NUL-padded C string field.
struct StrField {
  uint16_t offset = 0;
  uint16_t len = 0;
};

// Byte offsets of the InstrumentDefMsg fields we decode, per DBN version. v1 and v2 differ
// only from the symbol length (22 vs 71) on, plus strike_price moving up in v2; v3 drops
// trading_reference_price, widens raw_instrument_id and asset, and adds leg fields.
struct DefLayout {
  uint16_t size;
  uint16_t ts_recv;
  uint16_t min_price_increment;
  uint16_t display_factor;
  uint16_t expiration;
  uint16_t activation;
  uint16_t high_limit_price;
  uint16_t low_limit_price;
  uint16_t max_price_variation;
  uint16_t trading_reference_price;  // 0: absent (v3)
  uint16_t unit_of_measure_qty;
  uint16_t min_price_increment_amount;
  uint16_t price_ratio;
  uint16_t strike_price;
  uint16_t contract_multiplier;  // i32
  StrField currency;
  StrField raw_symbol;
  StrField group;
  StrField exchange;
  StrField asset;
  StrField security_type;
  StrField unit_of_measure;
  uint16_t instrument_class;
  uint16_t security_update_action;
};

constexpr DefLayout kDefV1{.size = 360,
                           .ts_recv = 16,
                           .min_price_increment = 24,
                           .display_factor = 32,
                           .expiration = 40,
                           .activation = 48,
                           .high_limit_price = 56,
                           .low_limit_price = 64,
                           .max_price_variation = 72,
                           .trading_reference_price = 80,
                           .unit_of_measure_qty = 88,
                           .min_price_increment_amount = 96,
                           .price_ratio = 104,
                           .strike_price = 328,
                           .contract_multiplier = 160,
                           .currency = {186, 4},
                           .raw_symbol = {200, 22},
                           .group = {222, 21},
                           .exchange = {243, 5},
                           .asset = {248, 7},
                           .security_type = {262, 7},
                           .unit_of_measure = {269, 31},
                           .instrument_class = 325,
                           .security_update_action = 349};
constexpr DefLayout kDefV2{.size = 400,
                           .ts_recv = 16,
                           .min_price_increment = 24,
                           .display_factor = 32,
                           .expiration = 40,
                           .activation = 48,
                           .high_limit_price = 56,
                           .low_limit_price = 64,
                           .max_price_variation = 72,
                           .trading_reference_price = 80,
                           .unit_of_measure_qty = 88,
                           .min_price_increment_amount = 96,
                           .price_ratio = 104,
                           .strike_price = 112,
                           .contract_multiplier = 164,
                           .currency = {186, 4},
                           .raw_symbol = {200, 71},
                           .group = {271, 21},
                           .exchange = {292, 5},
                           .asset = {297, 7},
                           .security_type = {311, 7},
                           .unit_of_measure = {318, 31},
                           .instrument_class = 374,
                           .security_update_action = 382};
constexpr DefLayout kDefV3{.size = 520,
                           .ts_recv = 16,
                           .min_price_increment = 24,
                           .display_factor = 32,
                           .expiration = 40,
                           .activation = 48,
                           .high_limit_price = 56,
                           .low_limit_price = 64,
                           .max_price_variation = 72,
                           .trading_reference_price = 0,
                           .unit_of_measure_qty = 80,
                           .min_price_increment_amount = 88,
                           .price_ratio = 96,
                           .strike_price = 104,
                           .contract_multiplier = 176,
                           .currency = {224, 4},
                           .raw_symbol = {238, 71},
                           .group = {309, 21},
                           .exchange = {330, 5},
                           .asset = {335, 11},
                           .security_type = {353, 7},
                           .unit_of_measure = {360, 31},
                           .instrument_class = 487,
                           .security_update_action = 493};

const DefLayout* def_layout(uint8_t version) {
  switch (version) {
    case 1:
      return &kDefV1;
    case 2:
      return &kDefV2;
    case 3:
      return &kDefV3;
    default:
      return nullptr;
  }
}

std::string read_cstr(const uint8_t* p, size_t len) {
  const void* nul = std::memchr(p, 0, len);
  size_t n = nul != nullptr ? static_cast<size_t>(static_cast<const uint8_t*>(nul) - p) : len;
  return std::string(reinterpret_cast<const char*>(p), n);
}

// Minimum record size per rtype: the known layouts, else just the header.
void fill_min_lengths(uint8_t version, uint16_t* min_len) {
  std::fill(min_len, min_len + 256, static_cast<uint16_t>(sizeof(RecordHeader)));
  min_len[kRTypeMbp0] = sizeof(TradeMsg);
  min_len[kRTypeMbp1] = sizeof(Mbp1Msg);
  min_len[kRTypeMbp10] = sizeof(Mbp10Msg);
  min_len[kRTypeMbo] = sizeof(MboMsg);
  min_len[kRTypeDefinition] = static_cast<uint16_t>(definition_size(version));
}

const char* rtype_name(uint8_t rtype) {
  switch (rtype) {
    case kRTypeMbp0:
      return "trade";
    case kRTypeMbp1:
      return "mbp-1";
    case kRTypeMbp10:
      return "mbp-10";
    case kRTypeDefinition:
      return "definition";
    case kRTypeMbo:
      return "mbo";
    default:
      return "record";
  }
}

// Bounds-checked reader over the metadata bytes; the first failure sticks.
class MetaCursor {
 public:
  MetaCursor(const std::string& path, const uint8_t* p, size_t size, uint64_t base)
      : path_(path), p_(p), size_(size), base_(base) {}

  bool ok() const { return status_.ok(); }
  Status take_status() { return std::move(status_); }
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }
  uint64_t offset() const { return base_ + pos_; }

  bool need(size_t n, const char* what) {
    if (!status_.ok()) return false;
    if (left() < n) {
      status_ = InvalidInput("{}: offset {}: metadata ends before {} ({} bytes needed, {} left)",
                             path_, offset(), what, n, left());
      return false;
    }
    return true;
  }
  template <typename T>
  T get(const char* what) {
    if (!need(sizeof(T), what)) return T{};
    T v = load<T>(p_ + pos_);
    pos_ += sizeof(T);
    return v;
  }
  std::string cstr(size_t len, const char* what) {
    if (!need(len, what)) return {};
    std::string s = read_cstr(p_ + pos_, len);
    pos_ += len;
    return s;
  }
  void skip(size_t n, const char* what) {
    if (need(n, what)) pos_ += n;
  }
  // A u32 count of items at least `item_len` bytes each, checked against what is left.
  uint32_t count(size_t item_len, const char* what) {
    uint64_t at = offset();
    uint32_t n = get<uint32_t>(what);
    if (ok() && uint64_t{n} * item_len > left()) {
      status_ = InvalidInput(
          "{}: offset {}: {} count {} needs at least {} bytes but only {} metadata bytes are left",
          path_, at, what, n, uint64_t{n} * item_len, left());
      return 0;
    }
    return n;
  }
  void fail(uint64_t at, std::string what) {
    if (status_.ok()) status_ = InvalidInput("{}: offset {}: {}", path_, at, what);
  }

 private:
  const std::string& path_;
  const uint8_t* p_;
  size_t size_;
  uint64_t base_;
  size_t pos_ = 0;
  Status status_;
};

Status parse_metadata(const std::string& path, uint8_t version, const uint8_t* p, size_t len,
                      Metadata* md) {
  MetaCursor c(path, p, len, kPreludeLen);
  md->version = version;
  md->dataset = c.cstr(16, "dataset");
  md->schema = static_cast<Schema>(c.get<uint16_t>("schema"));
  md->start = c.get<uint64_t>("start");
  md->end = c.get<uint64_t>("end");
  md->limit = c.get<uint64_t>("limit");
  size_t cstr_len = kSymbolCstrLenV1;
  if (version == 1) {
    md->record_count = c.get<uint64_t>("record_count");
    md->stype_in = c.get<uint8_t>("stype_in");
    md->stype_out = c.get<uint8_t>("stype_out");
    md->ts_out = c.get<uint8_t>("ts_out") != 0;
    c.skip(47, "reserved bytes");
  } else {
    md->stype_in = c.get<uint8_t>("stype_in");
    md->stype_out = c.get<uint8_t>("stype_out");
    md->ts_out = c.get<uint8_t>("ts_out") != 0;
    uint64_t at = c.offset();
    cstr_len = c.get<uint16_t>("symbol_cstr_len");
    if (c.ok() && cstr_len == 0) c.fail(at, "symbol_cstr_len is 0, expected a positive length");
    c.skip(53, "reserved bytes");
  }
  uint64_t sdl_at = c.offset();
  uint32_t sdl = c.get<uint32_t>("schema_definition_length");
  if (c.ok() && sdl != 0) {
    c.fail(sdl_at, fmt::format("schema_definition_length is {}, expected 0", sdl));
  }
  auto read_list = [&](const char* what, std::vector<std::string>* out) {
    uint32_t n = c.count(cstr_len, what);
    out->reserve(n);
    for (uint32_t i = 0; i < n && c.ok(); ++i) out->push_back(c.cstr(cstr_len, what));
  };
  read_list("symbols", &md->symbols);
  read_list("partial", &md->partial);
  read_list("not_found", &md->not_found);
  uint32_t n_mappings = c.count(cstr_len + 4, "mappings");
  md->mappings.reserve(n_mappings);
  for (uint32_t i = 0; i < n_mappings && c.ok(); ++i) {
    SymbolMapping m;
    m.raw_symbol = c.cstr(cstr_len, "mapping raw_symbol");
    uint32_t n_intervals = c.count(8 + cstr_len, "mapping intervals");
    m.intervals.reserve(n_intervals);
    for (uint32_t j = 0; j < n_intervals && c.ok(); ++j) {
      SymbolMapping::Interval iv;
      iv.start_date = c.get<uint32_t>("interval start_date");
      iv.end_date = c.get<uint32_t>("interval end_date");
      iv.symbol = c.cstr(cstr_len, "interval symbol");
      m.intervals.push_back(std::move(iv));
    }
    md->mappings.push_back(std::move(m));
  }
  // Whatever follows (v3 alignment padding) is ignored.
  return c.take_status();
}

}  // namespace

size_t definition_size(uint8_t version) {
  const DefLayout* l = def_layout(version);
  return l != nullptr ? l->size : 0;
}

const char* schema_name(Schema s) {
  switch (s) {
    case Schema::kMbo:
      return "mbo";
    case Schema::kMbp1:
      return "mbp-1";
    case Schema::kMbp10:
      return "mbp-10";
    case Schema::kTbbo:
      return "tbbo";
    case Schema::kTrades:
      return "trades";
    case Schema::kOhlcv1S:
      return "ohlcv-1s";
    case Schema::kOhlcv1M:
      return "ohlcv-1m";
    case Schema::kOhlcv1H:
      return "ohlcv-1h";
    case Schema::kOhlcv1D:
      return "ohlcv-1d";
    case Schema::kDefinition:
      return "definition";
    case Schema::kStatistics:
      return "statistics";
    case Schema::kStatus:
      return "status";
    case Schema::kImbalance:
      return "imbalance";
    case Schema::kOhlcvEod:
      return "ohlcv-eod";
    case Schema::kCmbp1:
      return "cmbp-1";
    case Schema::kCbbo1S:
      return "cbbo-1s";
    case Schema::kCbbo1M:
      return "cbbo-1m";
    case Schema::kTcbbo:
      return "tcbbo";
    case Schema::kBbo1S:
      return "bbo-1s";
    case Schema::kBbo1M:
      return "bbo-1m";
    case Schema::kMixed:
      return "mixed";
  }
  return "unknown";
}

const char* stype_name(uint8_t stype) {
  static const char* const kNames[] = {
      "instrument_id",   "raw_symbol", "smart",      "continuous", "parent",
      "nasdaq_symbol",   "cms_symbol", "isin",       "us_code",    "bbg_comp_id",
      "bbg_comp_ticker", "figi",       "figi_ticker"};
  if (stype < std::size(kNames)) return kNames[stype];
  return stype == 0xFF ? "mixed" : "unknown";
}

// ---- reader -------------------------------------------------------------------------------
//
// Invariant: [cur, end) holds the decoded bytes not yet handed out, cur_offset is the stream
// offset of cur. For plain input they point into the mapping (or the caller's memory); for
// zstd input into `buf`, which is refilled (after moving the unread tail to its start) when a
// record does not fit.
struct Reader::Impl {
  std::string path;
  Metadata metadata;
  Status status;
  uint16_t min_len[256];

  MappedFile file;
  const uint8_t* input = nullptr;
  size_t input_size = 0;

  ZSTD_DCtx* dctx = nullptr;
  size_t in_pos = 0;
  bool frame_open = false;  // the last zstd call ended inside a frame
  bool eof = true;          // nothing more will be decoded
  std::unique_ptr<uint8_t[]> buf;
  size_t buf_cap = 0;

  const uint8_t* cur = nullptr;
  const uint8_t* end = nullptr;
  uint64_t cur_offset = 0;

  ~Impl() { ZSTD_freeDCtx(dctx); }

  size_t avail() const { return static_cast<size_t>(end - cur); }

  bool fail(Status s) {
    if (status.ok()) status = std::move(s);
    eof = true;
    return false;
  }

  // Decodes until at least `need` bytes are available or the input ends. Returns false
  // (status set) on corrupt zstd data; a short result at the end of input is not an error here.
  bool fill(size_t need) {
    while (avail() < need && !eof) {
      if (cur != buf.get()) {
        size_t tail = avail();
        std::memmove(buf.get(), cur, tail);
        cur = buf.get();
        end = cur + tail;
      }
      if (avail() == buf_cap) {  // full of real data: grow (only for very long metadata)
        size_t cap = buf_cap * 2;
        auto bigger = std::make_unique<uint8_t[]>(cap);
        std::memcpy(bigger.get(), buf.get(), buf_cap);
        buf = std::move(bigger);
        buf_cap = cap;
        cur = buf.get();
        end = cur + cap / 2;
      }
      ZSTD_inBuffer in{input, input_size, in_pos};
      ZSTD_outBuffer out{buf.get(), buf_cap, avail()};
      size_t before_in = in.pos, before_out = out.pos;
      size_t r = ZSTD_decompressStream(dctx, &out, &in);
      if (ZSTD_isError(r)) {
        return fail(InvalidInput("{}: offset {}: corrupt zstd data ({}) (compressed byte offset)",
                                 path, in_pos, ZSTD_getErrorName(r)));
      }
      in_pos = in.pos;
      end = buf.get() + out.pos;
      frame_open = r != 0;
      if (in.pos == in.size && out.pos < out.size) {
        eof = true;
        if (frame_open) {
          return fail(InvalidInput(
              "{}: offset {}: zstd data ends inside a frame (truncated file; compressed byte "
              "offset)",
              path, input_size));
        }
      } else if (in.pos == before_in && out.pos == before_out) {
        return fail(InvalidInput("{}: offset {}: zstd decoder made no progress", path, in_pos));
      }
    }
    return true;
  }

  bool next_slow(RecordRef* record);
  Status open_stream(uint8_t fragment_version);
};

bool Reader::Impl::next_slow(RecordRef* record) {
  if (!status.ok()) return false;
  for (;;) {
    size_t have = avail();
    size_t need = sizeof(RecordHeader);
    if (have >= need) need = size_t{cur[0]} * 4;
    if (need > have && !eof) {
      if (!fill(std::max(need, sizeof(RecordHeader)))) return false;
      continue;
    }
    if (have == 0) return false;  // clean end
    if (have < sizeof(RecordHeader)) {
      return fail(InvalidInput(
          "{}: offset {}: input ends inside a record header ({} bytes left, expected 16)", path,
          cur_offset, have));
    }
    uint8_t rtype = cur[1];
    size_t n = size_t{cur[0]} * 4;
    if (n == 0) {
      return fail(InvalidInput(
          "{}: offset {}: record length is 0, expected at least 4 words (16-byte header)", path,
          cur_offset));
    }
    if (n < min_len[rtype]) {
      return fail(InvalidInput(
          "{}: offset {}: {} record (rtype 0x{:02X}) is {} bytes, shorter than its {}-byte layout",
          path, cur_offset, rtype_name(rtype), rtype, n, min_len[rtype]));
    }
    if (n > have) {
      return fail(InvalidInput(
          "{}: offset {}: record of {} bytes is cut off by the end of the input ({} bytes left)",
          path, cur_offset, n, have));
    }
    record->header = reinterpret_cast<const RecordHeader*>(cur);
    record->offset = cur_offset;
    cur += n;
    cur_offset += n;
    return true;
  }
}

Status Reader::Impl::open_stream(uint8_t fragment_version) {
  if (fragment_version > 3) {
    return UsageError("{}: DBN version {} was given for a fragment (expected 1, 2 or 3)", path,
                      fragment_version);
  }
  uint32_t magic = input_size >= 4 ? load<uint32_t>(input) : 0;
  if ((magic & 0xFFFFFFF0u) == kSkippableMagic) {
    return InvalidInput(
        "{}: offset 0: legacy .dbz format is not supported (re-encode it with databento's dbn "
        "CLI as DBN)",
        path);
  }
  if (magic == kZstdMagic) {
    dctx = ZSTD_createDCtx();
    if (dctx == nullptr) return InternalError("{}: cannot create a zstd decoder", path);
    buf_cap = input_size < (64 << 10) ? kMinZstdBuffer : kZstdBuffer;
    buf = std::make_unique_for_overwrite<uint8_t[]>(buf_cap);
    cur = end = buf.get();
    eof = false;
    if (!fill(kPreludeLen)) return status;
  } else {
    cur = input;
    end = input + input_size;
  }

  uint8_t version = 0;
  if (avail() >= 3 && std::memcmp(cur, "DBZ", 3) == 0) {
    return InvalidInput(
        "{}: offset 0: legacy .dbz format is not supported (re-encode it with databento's dbn "
        "CLI as DBN)",
        path);
  }
  if (avail() >= 3 && std::memcmp(cur, "DBN", 3) == 0) {
    if (avail() < kPreludeLen) {
      return InvalidInput("{}: offset {}: input ends inside the 8-byte DBN prelude", path, avail());
    }
    version = cur[3];
    if (version < 1 || version > 3) {
      return InvalidInput("{}: offset 3: unsupported DBN version {} (expected 1, 2 or 3)", path,
                          version);
    }
    uint32_t len = load<uint32_t>(cur + 4);
    if (len < kMetadataFixedLen + 4) {
      return InvalidInput(
          "{}: offset 4: metadata length {} is shorter than the {}-byte fixed metadata", path, len,
          kMetadataFixedLen + 4);
    }
    size_t total = kPreludeLen + size_t{len};
    if (dctx != nullptr && !fill(total)) return status;
    if (avail() < total) {
      return InvalidInput(
          "{}: offset 4: metadata length {} runs past the end of the {}input ({} bytes)", path, len,
          dctx != nullptr ? "decompressed " : "", avail());
    }
    FXT_RETURN_IF_ERROR(parse_metadata(path, version, cur + kPreludeLen, len, &metadata));
    cur += total;
    cur_offset = total;
  } else {
    if (fragment_version == 0) {
      if (avail() == 0) {
        return InvalidInput("{}: offset 0: empty input, expected a DBN prelude (\"DBN\")", path);
      }
      return InvalidInput(
          "{}: offset 0: expected a DBN prelude (\"DBN\" + version); for a records-only "
          ".dbn.frag stream the DBN version must be given (--dbn-version 1, 2 or 3)",
          path);
    }
    version = fragment_version;
    metadata.version = version;
  }
  fill_min_lengths(version, min_len);
  return Status::Ok();
}

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

Result<Reader> Reader::open(const std::string& path, ReaderOptions options) {
  FXT_ASSIGN_OR_RETURN(MappedFile file, MappedFile::open(path));
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->file = std::move(file);
  impl->input = impl->file.data();
  impl->input_size = impl->file.size();
  FXT_RETURN_IF_ERROR(impl->open_stream(options.fragment_version));
  return Reader(std::move(impl));
}

Result<Reader> Reader::open_memory(std::string_view name, const uint8_t* data, size_t size,
                                   ReaderOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->path = std::string(name);
  impl->input = data;
  impl->input_size = data != nullptr ? size : 0;
  FXT_RETURN_IF_ERROR(impl->open_stream(options.fragment_version));
  return Reader(std::move(impl));
}

const Metadata& Reader::metadata() const {
  return impl_->metadata;
}
const std::string& Reader::path() const {
  return impl_->path;
}
const Status& Reader::status() const {
  return impl_->status;
}
uint64_t Reader::bytes_consumed() const {
  return impl_->cur_offset;
}
uint64_t Reader::file_size() const {
  return impl_->input_size;
}

// The hot path: a whole record of a plausible length is already in the window.
bool Reader::next(RecordRef* record) {
  Impl& m = *impl_;
  const uint8_t* p = m.cur;
  size_t have = static_cast<size_t>(m.end - p);
  if (have >= sizeof(RecordHeader)) [[likely]] {
    size_t n = size_t{p[0]} * 4;
    if (n <= have && n >= m.min_len[p[1]]) [[likely]] {
      __builtin_prefetch(p + n + 2048);  // stay ahead of the next records (a no-op past the end)
      record->header = reinterpret_cast<const RecordHeader*>(p);
      record->offset = m.cur_offset;
      m.cur = p + n;
      m.cur_offset += n;
      return true;
    }
  }
  return m.next_slow(record);
}

Result<InstrumentDef> Reader::decode_definition(const RecordRef& record) const {
  const uint8_t version = impl_->metadata.version;
  const DefLayout* l = def_layout(version);
  if (l == nullptr) {
    return InvalidInput("{}: offset {}: unsupported DBN version {} (expected 1, 2 or 3)",
                        impl_->path, record.offset, version);
  }
  if (record.header == nullptr || record.rtype() != kRTypeDefinition) {
    return InvalidInput("{}: offset {}: expected a definition record (rtype 0x13)", impl_->path,
                        record.offset);
  }
  if (record.size() < l->size) {
    return InvalidInput(
        "{}: offset {}: definition record is {} bytes, shorter than the DBN v{} layout ({} bytes)",
        impl_->path, record.offset, record.size(), version, l->size);
  }
  const auto* p = reinterpret_cast<const uint8_t*>(record.header);
  InstrumentDef d;
  d.instrument_id = record.header->instrument_id;
  d.ts_event = record.header->ts_event;
  d.ts_recv = load<uint64_t>(p + l->ts_recv);
  d.min_price_increment = load<int64_t>(p + l->min_price_increment);
  d.display_factor = load<int64_t>(p + l->display_factor);
  d.unit_of_measure_qty = load<int64_t>(p + l->unit_of_measure_qty);
  d.expiration = load<int64_t>(p + l->expiration);
  d.contract_multiplier = load<int32_t>(p + l->contract_multiplier);
  auto str = [p](StrField f) { return read_cstr(p + f.offset, f.len); };
  d.raw_symbol = str(l->raw_symbol);
  d.currency = str(l->currency);
  d.unit_of_measure = str(l->unit_of_measure);
  d.exchange = str(l->exchange);
  d.asset = str(l->asset);
  d.group = str(l->group);
  d.security_type = str(l->security_type);
  d.instrument_class = static_cast<char>(p[l->instrument_class]);
  return d;
}

// ---- writer -------------------------------------------------------------------------------

namespace {

Result<std::string> encode_metadata(const std::string& path, const Metadata& md, uint8_t version) {
  const size_t cstr_len = version == 1 ? kSymbolCstrLenV1 : kSymbolCstrLenV2;
  std::string out(kPreludeLen, '\0');
  out[0] = 'D';
  out[1] = 'B';
  out[2] = 'N';
  out[3] = static_cast<char>(version);
  Status err;
  auto put_cstr = [&](const std::string& s, size_t len, const char* what) {
    if (s.size() >= len && err.ok()) {
      err = InvalidInput("{}: offset {}: {} \"{}\" is longer than {} characters (DBN v{})", path,
                         out.size(), what, s, len - 1, version);
    }
    std::string field(len, '\0');
    std::memcpy(field.data(), s.data(), std::min(s.size(), len - 1));
    out += field;
  };
  auto put = [&](auto v) {
    char b[sizeof(v)];
    std::memcpy(b, &v, sizeof(v));
    out.append(b, sizeof(v));
  };
  put_cstr(md.dataset, 16, "dataset");
  put(static_cast<uint16_t>(md.schema));
  put(md.start);
  put(md.end);
  put(md.limit);
  if (version == 1) {
    put(md.record_count);
    put(md.stype_in);
    put(md.stype_out);
    put(static_cast<uint8_t>(md.ts_out ? 1 : 0));
    out.append(47, '\0');
  } else {
    put(md.stype_in);
    put(md.stype_out);
    put(static_cast<uint8_t>(md.ts_out ? 1 : 0));
    put(static_cast<uint16_t>(cstr_len));
    out.append(53, '\0');
  }
  put(uint32_t{0});  // schema_definition_length
  for (const auto* list : {&md.symbols, &md.partial, &md.not_found}) {
    put(static_cast<uint32_t>(list->size()));
    for (const std::string& s : *list) put_cstr(s, cstr_len, "symbol");
  }
  put(static_cast<uint32_t>(md.mappings.size()));
  for (const SymbolMapping& m : md.mappings) {
    put_cstr(m.raw_symbol, cstr_len, "mapping raw_symbol");
    put(static_cast<uint32_t>(m.intervals.size()));
    for (const SymbolMapping::Interval& iv : m.intervals) {
      put(iv.start_date);
      put(iv.end_date);
      put_cstr(iv.symbol, cstr_len, "mapping symbol");
    }
  }
  if (version >= 3) out.append((8 - out.size() % 8) % 8, '\0');  // records start 8-aligned
  if (!err.ok()) return err;
  if (out.size() - kPreludeLen > std::numeric_limits<uint32_t>::max()) {
    return InvalidInput("{}: offset 4: metadata of {} bytes is too large for DBN", path,
                        out.size());
  }
  store(reinterpret_cast<uint8_t*>(out.data()) + 4, static_cast<uint32_t>(out.size() - 8));
  return out;
}

}  // namespace

struct Writer::Impl {
  std::string path;
  WriterOptions options;
  BufferedFileWriter file;
  ZSTD_CCtx* cctx = nullptr;
  std::unique_ptr<uint8_t[]> stage;  // uncompressed bytes waiting for the compressor
  size_t stage_size = 0;
  std::vector<uint8_t> zout;
  uint16_t min_len[256];
  uint64_t records = 0;
  uint64_t offset = 0;  // uncompressed bytes written
  bool closed = false;

  ~Impl() { ZSTD_freeCCtx(cctx); }

  Status compress(ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{stage.get(), stage_size, 0};
    for (;;) {
      ZSTD_outBuffer out{zout.data(), zout.size(), 0};
      size_t r = ZSTD_compressStream2(cctx, &out, &in, mode);
      if (ZSTD_isError(r)) {
        return InternalError("{}: offset {}: zstd compression failed: {}", path, offset,
                             ZSTD_getErrorName(r));
      }
      FXT_RETURN_IF_ERROR(file.write(zout.data(), out.pos));
      bool done = mode == ZSTD_e_end ? r == 0 : in.pos == in.size;
      if (done) break;
    }
    stage_size = 0;
    return Status::Ok();
  }

  Status put(const void* data, size_t n) {
    offset += n;
    if (cctx == nullptr) return file.write(data, n);
    const auto* p = static_cast<const uint8_t*>(data);
    while (n > 0) {
      size_t k = std::min(n, kWriterStage - stage_size);
      std::memcpy(stage.get() + stage_size, p, k);
      stage_size += k;
      p += k;
      n -= k;
      if (stage_size == kWriterStage) FXT_RETURN_IF_ERROR(compress(ZSTD_e_continue));
    }
    return Status::Ok();
  }

  Status check_open() const {
    if (closed) return InternalError("{}: the DBN writer is already closed", path);
    return Status::Ok();
  }
};

Writer::Writer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Writer::~Writer() = default;
Writer::Writer(Writer&&) noexcept = default;
Writer& Writer::operator=(Writer&&) noexcept = default;

Result<Writer> Writer::create(const std::string& path, const Metadata& metadata,
                              WriterOptions options) {
  if (options.version < 1 || options.version > 3) {
    return UsageError("{}: cannot write DBN version {} (expected 1, 2 or 3)", path,
                      options.version);
  }
  FXT_ASSIGN_OR_RETURN(std::string header, encode_metadata(path, metadata, options.version));
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->options = options;
  fill_min_lengths(options.version, impl->min_len);
  FXT_ASSIGN_OR_RETURN(impl->file, BufferedFileWriter::create(path, /*atomic=*/true));
  if (options.zstd) {
    impl->cctx = ZSTD_createCCtx();
    if (impl->cctx == nullptr) return InternalError("{}: cannot create a zstd encoder", path);
    size_t r = ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_compressionLevel, options.zstd_level);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_checksumFlag, 1);
    if (!ZSTD_isError(r) && options.zstd_workers > 0) {
      r = ZSTD_CCtx_setParameter(impl->cctx, ZSTD_c_nbWorkers, options.zstd_workers);
    }
    if (ZSTD_isError(r)) {
      return UsageError("{}: bad zstd setting (level {}): {}", path, options.zstd_level,
                        ZSTD_getErrorName(r));
    }
    impl->stage = std::make_unique_for_overwrite<uint8_t[]>(kWriterStage);
    impl->zout.resize(ZSTD_CStreamOutSize());
  }
  FXT_RETURN_IF_ERROR(impl->put(header.data(), header.size()));
  return Writer(std::move(impl));
}

Status Writer::write(const void* record) {
  Impl& m = *impl_;
  FXT_RETURN_IF_ERROR(m.check_open());
  const auto* p = static_cast<const uint8_t*>(record);
  size_t n = size_t{p[0]} * 4;
  uint8_t rtype = p[1];
  if (n < sizeof(RecordHeader)) {
    return InvalidInput(
        "{}: offset {}: record header length {} words is shorter than the header "
        "(4 words)",
        m.path, m.offset, p[0]);
  }
  if (n < m.min_len[rtype]) {
    return InvalidInput(
        "{}: offset {}: {} record (rtype 0x{:02X}) of {} bytes is shorter than its {}-byte "
        "layout in DBN v{}",
        m.path, m.offset, rtype_name(rtype), rtype, n, m.min_len[rtype], m.options.version);
  }
  FXT_RETURN_IF_ERROR(m.put(p, n));
  ++m.records;
  return Status::Ok();
}

Status Writer::write_definition(const InstrumentDef& def) {
  Impl& m = *impl_;
  FXT_RETURN_IF_ERROR(m.check_open());
  const DefLayout& l = *def_layout(m.options.version);
  uint8_t rec[520] = {};
  RecordHeader hd{static_cast<uint8_t>(l.size / 4), kRTypeDefinition, 0, def.instrument_id,
                  def.ts_event};
  std::memcpy(rec, &hd, sizeof(hd));
  constexpr int64_t kUndefPrice = std::numeric_limits<int64_t>::max();
  store<uint64_t>(rec + l.ts_recv, def.ts_recv);
  store<int64_t>(rec + l.min_price_increment, def.min_price_increment);
  store<int64_t>(rec + l.display_factor, def.display_factor);
  store<int64_t>(rec + l.expiration, def.expiration);
  store<uint64_t>(rec + l.activation, std::numeric_limits<uint64_t>::max());
  for (uint16_t at : {l.high_limit_price, l.low_limit_price, l.max_price_variation,
                      l.min_price_increment_amount, l.price_ratio, l.strike_price}) {
    store<int64_t>(rec + at, kUndefPrice);
  }
  if (l.trading_reference_price != 0) store<int64_t>(rec + l.trading_reference_price, kUndefPrice);
  store<int64_t>(rec + l.unit_of_measure_qty, def.unit_of_measure_qty);
  store<int32_t>(rec + l.contract_multiplier, def.contract_multiplier);
  Status err;
  auto put_str = [&](StrField f, const std::string& s, const char* what) {
    if (s.size() >= f.len && err.ok()) {
      err =
          InvalidInput("{}: offset {}: definition {} \"{}\" is longer than {} characters (DBN v{})",
                       m.path, m.offset, what, s, f.len - 1, m.options.version);
    }
    std::memcpy(rec + f.offset, s.data(), std::min<size_t>(s.size(), f.len - 1u));
  };
  put_str(l.raw_symbol, def.raw_symbol, "raw_symbol");
  put_str(l.currency, def.currency, "currency");
  put_str(l.unit_of_measure, def.unit_of_measure, "unit_of_measure");
  put_str(l.exchange, def.exchange, "exchange");
  put_str(l.asset, def.asset, "asset");
  put_str(l.group, def.group, "group");
  put_str(l.security_type, def.security_type, "security_type");
  FXT_RETURN_IF_ERROR(err);
  rec[l.instrument_class] = static_cast<uint8_t>(def.instrument_class);
  rec[l.security_update_action] = 'A';
  return write(rec);
}

Status Writer::close() {
  Impl& m = *impl_;
  FXT_RETURN_IF_ERROR(m.check_open());
  m.closed = true;
  if (m.cctx != nullptr) FXT_RETURN_IF_ERROR(m.compress(ZSTD_e_end));
  return m.file.commit();
}

uint64_t Writer::records_written() const {
  return impl_->records;
}

}  // namespace fxt::dbn
