// Databento Binary Encoding (DBN) versions 1-3: records, metadata, reader, writer.
//
// Layout facts: ../shared/data/README.md and docs/DATA.md. Records are read in
// place (zero copy) from a memory map for plain files, or from a decompression
// buffer for zstd files (any number of frames). The reader always advances by
// the record header's length field (4-byte words), so unknown record types and
// the ts_out suffix are skipped. Every malformed input becomes a Status naming
// the file, the byte offset and what was expected; nothing is read past the end.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace fxt::dbn {

// ---- record types ---------------------------------------------------------------
enum RType : uint8_t {
  kRTypeMbp0 = 0x00,  // trades
  kRTypeMbp1 = 0x01,  // mbp-1 and tbbo
  kRTypeMbp10 = 0x0A,
  kRTypeDefinition = 0x13,
  kRTypeMbo = 0xA0,
};

enum Flags : uint8_t {
  kFLast = 128,
  kFTob = 64,
  kFSnapshot = 32,
  kFMbp = 16,
  kFBadTsRecv = 8,
  kFMaybeBadBook = 4,
};

enum class Schema : uint16_t {
  kMbo = 0,
  kMbp1 = 1,
  kMbp10 = 2,
  kTbbo = 3,
  kTrades = 4,
  kOhlcv1S = 5,
  kOhlcv1M = 6,
  kOhlcv1H = 7,
  kOhlcv1D = 8,
  kDefinition = 9,
  kStatistics = 10,
  kStatus = 11,
  kImbalance = 12,
  kOhlcvEod = 13,
  kCmbp1 = 14,
  kCbbo1S = 15,
  kCbbo1M = 16,
  kTcbbo = 17,
  kBbo1S = 18,
  kBbo1M = 19,
  kMixed = 0xFFFF,
};
const char* schema_name(Schema s);

#pragma pack(push, 1)
struct RecordHeader {
  uint8_t length;  // record length in 4-byte words
  uint8_t rtype;
  uint16_t publisher_id;
  uint32_t instrument_id;
  uint64_t ts_event;
};
static_assert(sizeof(RecordHeader) == 16);

struct BidAskPair {
  int64_t bid_px, ask_px;
  uint32_t bid_sz, ask_sz, bid_ct, ask_ct;
};
static_assert(sizeof(BidAskPair) == 32);

// Trades (rtype 0), MBP-1/TBBO (rtype 1), MBP-10 (rtype 10) share this prefix.
template <int kLevels>
struct MbpMsg {
  RecordHeader hd;
  int64_t price;
  uint32_t size;
  char action;
  char side;
  uint8_t flags;
  uint8_t depth;
  uint64_t ts_recv;
  int32_t ts_in_delta;
  uint32_t sequence;
  BidAskPair levels[kLevels];
};
struct TradeMsg {
  RecordHeader hd;
  int64_t price;
  uint32_t size;
  char action;
  char side;
  uint8_t flags;
  uint8_t depth;
  uint64_t ts_recv;
  int32_t ts_in_delta;
  uint32_t sequence;
};
using Mbp1Msg = MbpMsg<1>;
using Mbp10Msg = MbpMsg<10>;
static_assert(sizeof(TradeMsg) == 48);
static_assert(sizeof(Mbp1Msg) == 80);
static_assert(sizeof(Mbp10Msg) == 368);

struct MboMsg {
  RecordHeader hd;
  uint64_t order_id;
  int64_t price;
  uint32_t size;
  uint8_t flags;
  uint8_t channel_id;
  char action;
  char side;
  uint64_t ts_recv;
  int32_t ts_in_delta;
  uint32_t sequence;
};
static_assert(sizeof(MboMsg) == 56);
#pragma pack(pop)

// Size in bytes of an InstrumentDefMsg in DBN `version` (1: 360, 2: 400, 3: 520); 0 if unknown.
size_t definition_size(uint8_t version);

// Instrument definition, decoded from any DBN version into one version-independent form.
struct InstrumentDef {
  uint32_t instrument_id = 0;
  uint64_t ts_event = 0;
  uint64_t ts_recv = 0;
  int64_t min_price_increment = 0;  // tick size, 1e-9 units (0 or INT64_MAX when unknown)
  int64_t display_factor = 0;
  int64_t unit_of_measure_qty = 0;  // 1e-9 units
  int64_t expiration = 0;
  int32_t contract_multiplier = 0;
  std::string raw_symbol;
  std::string currency;
  std::string unit_of_measure;
  std::string exchange;
  std::string asset;
  std::string group;
  std::string security_type;
  char instrument_class = 0;
};

// ---- metadata -----------------------------------------------------------------
struct SymbolMapping {
  std::string raw_symbol;
  struct Interval {
    uint32_t start_date = 0;  // YYYYMMDD
    uint32_t end_date = 0;
    std::string symbol;
  };
  std::vector<Interval> intervals;
};

struct Metadata {
  uint8_t version = 3;
  std::string dataset;
  Schema schema = Schema::kMixed;  // kMixed (0xFFFF) when the file holds several schemas
  uint64_t start = 0;
  uint64_t end = 0;           // UINT64_MAX when unset
  uint64_t limit = 0;         // 0 when unset
  uint64_t record_count = 0;  // v1 only
  uint8_t stype_in = 0xFF;    // 0xFF when mixed/unset
  uint8_t stype_out = 0;
  bool ts_out = false;
  std::vector<std::string> symbols;
  std::vector<std::string> partial;
  std::vector<std::string> not_found;
  std::vector<SymbolMapping> mappings;
};
const char* stype_name(uint8_t stype);

// ---- reading ------------------------------------------------------------------
struct ReaderOptions {
  // For a `.dbn.frag` stream (records only, no metadata) the DBN version must be
  // given: 1, 2 or 3. 0 means: the input must start with a DBN prelude.
  uint8_t fragment_version = 0;
};

// A record in the reader's buffer; valid until the next call to next().
struct RecordRef {
  const RecordHeader* header = nullptr;
  uint64_t offset = 0;  // byte offset of the record in the decompressed stream

  uint8_t rtype() const { return header->rtype; }
  size_t size() const { return size_t{header->length} * 4; }
  template <typename T>
  const T& as() const {
    return *reinterpret_cast<const T*>(header);
  }
};

class Reader {
 public:
  ~Reader();
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;

  // Opens `.dbn`, `.dbn.zst`, `.dbn.frag`, `.dbn.frag.zst` (detected by content, not name).
  // A legacy `.dbz` file is rejected with a clear message.
  static Result<Reader> open(const std::string& path, ReaderOptions options = {});
  // The same, over bytes in memory (tests, fuzzing). `name` stands for the path in
  // messages; the bytes are not copied and must outlive the reader.
  static Result<Reader> open_memory(std::string_view name, const uint8_t* data, size_t size,
                                    ReaderOptions options = {});

  const Metadata& metadata() const;
  const std::string& path() const;

  // Advances to the next record. Returns false at a clean end of input. A record
  // too short for its rtype's layout, a length of zero, or a record cut off by
  // the end of the input sets a non-OK status() and returns false.
  bool next(RecordRef* record);
  const Status& status() const;

  // Decodes a definition record (any version) into InstrumentDef.
  Result<InstrumentDef> decode_definition(const RecordRef& record) const;

  // Bytes of (decompressed) input consumed so far, and the compressed file size.
  uint64_t bytes_consumed() const;
  uint64_t file_size() const;

 private:
  struct Impl;
  explicit Reader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---- writing ------------------------------------------------------------------
struct WriterOptions {
  bool zstd = true;  // compress (one zstd stream); false writes plain DBN
  int zstd_level = 3;
  uint8_t version = 3;  // DBN version of the metadata written (records are identical)
  // Background compression threads (0: compress on the calling thread). The bytes written
  // are the same for every value >= 1 (libzstd's guarantee), so seeded outputs stay stable.
  int zstd_workers = 0;
};

// Writes metadata then records; close() commits the file atomically
// (temporary name, fsync, rename).
class Writer {
 public:
  ~Writer();
  Writer(Writer&&) noexcept;
  Writer& operator=(Writer&&) noexcept;

  static Result<Writer> create(const std::string& path, const Metadata& metadata,
                               WriterOptions options = {});
  // `record` starts with a RecordHeader whose length field is already set.
  Status write(const void* record);
  Status write_definition(const InstrumentDef& def);
  Status close();
  uint64_t records_written() const;

 private:
  struct Impl;
  explicit Writer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Fills a RecordHeader for a fixed-size record struct T.
template <typename T>
void init_header(T* rec, uint8_t rtype, uint16_t publisher_id, uint32_t instrument_id,
                 uint64_t ts_event) {
  rec->hd.length = static_cast<uint8_t>(sizeof(T) / 4);
  rec->hd.rtype = rtype;
  rec->hd.publisher_id = publisher_id;
  rec->hd.instrument_id = instrument_id;
  rec->hd.ts_event = ts_event;
}

}  // namespace fxt::dbn
