// DBN reader and writer: every shared fixture decodes to its published ground truth
// (../shared/data/README.md), and encode -> decode round trips are exact.
#include "data/dbn.h"

#include <zstd.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/file_util.h"
#include "test_util.h"

namespace fxt::dbn {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDbnDir = "dbn-fixtures/databento-dbn/tests/data/";
constexpr const char* kCppDir = "dbn-fixtures/databento-cpp/tests/data/";
constexpr const char* kPyDir = "dbn-fixtures/databento-python/tests/data/";

std::string fixture(const std::string& relative) {
  return test::shared_file(relative);
}

struct Decoded {
  Metadata md;
  std::vector<std::string> records;  // raw bytes, header included
  std::vector<InstrumentDef> defs;
};

// Reads a whole file; failures become gtest failures and an empty result.
Decoded decode_all(const std::string& path, ReaderOptions options = {}) {
  Decoded d;
  auto reader = Reader::open(path, options);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  if (!reader.ok()) return d;
  d.md = reader->metadata();
  RecordRef rec;
  while (reader->next(&rec)) {
    d.records.emplace_back(reinterpret_cast<const char*>(rec.header), rec.size());
    if (rec.rtype() == kRTypeDefinition) {
      auto def = reader->decode_definition(rec);
      EXPECT_TRUE(def.ok()) << def.status().message();
      if (def.ok()) d.defs.push_back(*def);
    }
  }
  EXPECT_TRUE(reader->status().ok()) << reader->status().message();
  return d;
}

template <typename T>
T as(const std::string& bytes) {
  T v;
  EXPECT_GE(bytes.size(), sizeof(T));
  std::memcpy(&v, bytes.data(), sizeof(T));
  return v;
}

std::string zstd_decompress(const std::string& path) {
  auto bytes = read_file(path);
  EXPECT_TRUE(bytes.ok());
  std::string out;
  ZSTD_DCtx* d = ZSTD_createDCtx();
  ZSTD_inBuffer in{bytes->data(), bytes->size(), 0};
  std::vector<char> buf(1 << 16);
  while (in.pos < in.size) {
    ZSTD_outBuffer o{buf.data(), buf.size(), 0};
    size_t r = ZSTD_decompressStream(d, &o, &in);
    EXPECT_FALSE(ZSTD_isError(r));
    if (ZSTD_isError(r)) break;
    out.append(buf.data(), o.pos);
  }
  ZSTD_freeDCtx(d);
  return out;
}

// ---- the GLBX ESH1 fixtures ---------------------------------------------------------

struct Variant {
  std::string path;
  uint8_t version;
};

// Every full-file (metadata + records) variant of one GLBX schema.
std::vector<Variant> glbx_variants(const std::string& schema) {
  std::string dbn = kDbnDir, cpp = kCppDir;
  return {{dbn + "test_data." + schema + ".dbn", 2},
          {dbn + "test_data." + schema + ".v1.dbn.zst", 1},
          {dbn + "test_data." + schema + ".v2.dbn.zst", 2},
          {dbn + "test_data." + schema + ".v3.dbn.zst", 3},
          {cpp + "test_data." + schema + ".v1.dbn", 1}};
}

void expect_glbx_metadata(const Metadata& md, uint8_t version, Schema schema) {
  EXPECT_EQ(md.version, version);
  EXPECT_EQ(md.dataset, "GLBX.MDP3");
  EXPECT_EQ(md.schema, schema);
  EXPECT_EQ(md.start, 1609160400000000000ull);
  EXPECT_EQ(md.end, 1609200000000000000ull);
  EXPECT_EQ(md.limit, 2u);
  // v1 record_count: databento-cpp's files say 2, databento-dbn's say UINT64_MAX (unknown).
  if (version == 1) {
    EXPECT_TRUE(md.record_count == 2 || md.record_count == UINT64_MAX) << md.record_count;
  }
  EXPECT_EQ(md.stype_in, 1);   // raw_symbol
  EXPECT_EQ(md.stype_out, 0);  // instrument_id
  EXPECT_STREQ(stype_name(md.stype_in), "raw_symbol");
  EXPECT_STREQ(stype_name(md.stype_out), "instrument_id");
  EXPECT_FALSE(md.ts_out);
  EXPECT_EQ(md.symbols, std::vector<std::string>{"ESH1"});
  EXPECT_TRUE(md.partial.empty());
  EXPECT_TRUE(md.not_found.empty());
  ASSERT_EQ(md.mappings.size(), 1u);
  EXPECT_EQ(md.mappings[0].raw_symbol, "ESH1");
  ASSERT_EQ(md.mappings[0].intervals.size(), 1u);
  EXPECT_EQ(md.mappings[0].intervals[0].start_date, 20201228u);
  EXPECT_EQ(md.mappings[0].intervals[0].end_date, 20201229u);
  EXPECT_EQ(md.mappings[0].intervals[0].symbol, "5482");
}

void expect_level(const BidAskPair& l, int64_t bid_px, int64_t ask_px, uint32_t bid_sz,
                  uint32_t ask_sz, uint32_t bid_ct, uint32_t ask_ct) {
  EXPECT_EQ(l.bid_px, bid_px);
  EXPECT_EQ(l.ask_px, ask_px);
  EXPECT_EQ(l.bid_sz, bid_sz);
  EXPECT_EQ(l.ask_sz, ask_sz);
  EXPECT_EQ(l.bid_ct, bid_ct);
  EXPECT_EQ(l.ask_ct, ask_ct);
}

TEST(DbnFixtures, Mbp10AllVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const Variant& v : glbx_variants("mbp-10")) {
    SCOPED_TRACE(v.path);
    Decoded d = decode_all(fixture(v.path));
    expect_glbx_metadata(d.md, v.version, Schema::kMbp10);
    ASSERT_EQ(d.records.size(), 2u);
    auto r1 = as<Mbp10Msg>(d.records[0]);
    EXPECT_EQ(r1.hd.length, 92);
    EXPECT_EQ(r1.hd.rtype, kRTypeMbp10);
    EXPECT_EQ(r1.hd.publisher_id, 1);
    EXPECT_EQ(r1.hd.instrument_id, 5482u);
    EXPECT_EQ(r1.hd.ts_event, 1609160400000429831ull);
    EXPECT_EQ(r1.price, 3722750000000);
    EXPECT_EQ(r1.size, 1u);
    EXPECT_EQ(r1.action, 'C');
    EXPECT_EQ(r1.side, 'A');
    EXPECT_EQ(r1.flags, 128);
    EXPECT_EQ(r1.depth, 9);
    EXPECT_EQ(r1.ts_recv, 1609160400000704060ull);
    EXPECT_EQ(r1.ts_in_delta, 22993);
    EXPECT_EQ(r1.sequence, 1170352u);
    expect_level(r1.levels[0], 3720250000000, 3720500000000, 24, 10, 15, 8);
    expect_level(r1.levels[1], 3720000000000, 3720750000000, 31, 34, 18, 24);
    expect_level(r1.levels[2], 3719750000000, 3721000000000, 32, 39, 23, 25);
    auto r2 = as<Mbp10Msg>(d.records[1]);
    EXPECT_EQ(r2.hd.instrument_id, 5482u);
    EXPECT_EQ(r2.hd.ts_event, 1609160400000435673ull);
    EXPECT_EQ(r2.price, 3720000000000);
    EXPECT_EQ(r2.action, 'C');
    EXPECT_EQ(r2.side, 'B');
    EXPECT_EQ(r2.depth, 1);
    EXPECT_EQ(r2.sequence, 1170356u);
    EXPECT_EQ(r2.levels[1].bid_sz, 30u);
    EXPECT_EQ(r2.levels[1].ask_sz, 34u);
    EXPECT_EQ(r2.levels[1].bid_ct, 17u);
    EXPECT_EQ(r2.levels[1].ask_ct, 24u);
  }
}

TEST(DbnFixtures, Mbp1AllVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const Variant& v : glbx_variants("mbp-1")) {
    SCOPED_TRACE(v.path);
    Decoded d = decode_all(fixture(v.path));
    expect_glbx_metadata(d.md, v.version, Schema::kMbp1);
    ASSERT_EQ(d.records.size(), 2u);
    auto r = as<Mbp1Msg>(d.records[0]);
    EXPECT_EQ(r.hd.rtype, kRTypeMbp1);
    EXPECT_EQ(r.hd.length, 20);
    EXPECT_EQ(r.hd.publisher_id, 1);
    EXPECT_EQ(r.hd.instrument_id, 5482u);
    EXPECT_EQ(r.hd.ts_event, 1609160400006001487ull);
    EXPECT_EQ(r.price, 3720500000000);
    EXPECT_EQ(r.size, 1u);
    EXPECT_EQ(r.action, 'A');
    EXPECT_EQ(r.side, 'A');
    EXPECT_EQ(r.flags, 128);
    EXPECT_EQ(r.ts_recv, 1609160400006136329ull);
    EXPECT_EQ(r.ts_in_delta, 17214);
    EXPECT_EQ(r.sequence, 1170362u);
    expect_level(r.levels[0], 3720250000000, 3720500000000, 24, 11, 15, 9);
    auto r2 = as<Mbp1Msg>(d.records[1]);
    EXPECT_EQ(r2.hd.ts_event, 1609160400006146661ull);
    expect_level(r2.levels[0], 3720250000000, 3720500000000, 24, 12, 15, 10);
  }
}

TEST(DbnFixtures, TbboAllVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const Variant& v : glbx_variants("tbbo")) {
    SCOPED_TRACE(v.path);
    Decoded d = decode_all(fixture(v.path));
    expect_glbx_metadata(d.md, v.version, Schema::kTbbo);
    ASSERT_EQ(d.records.size(), 2u);
    auto r = as<Mbp1Msg>(d.records[0]);
    EXPECT_EQ(r.hd.rtype, kRTypeMbp1);
    EXPECT_EQ(r.hd.ts_event, 1609160400098821953ull);
    EXPECT_EQ(r.price, 3720250000000);
    EXPECT_EQ(r.size, 5u);
    EXPECT_EQ(r.action, 'T');
    EXPECT_EQ(r.side, 'A');
    EXPECT_EQ(r.flags, 129);
    EXPECT_EQ(r.ts_recv, 1609160400099150057ull);
    EXPECT_EQ(r.sequence, 1170380u);
    expect_level(r.levels[0], 3720250000000, 3720500000000, 26, 7, 16, 6);
    auto r2 = as<Mbp1Msg>(d.records[1]);
    EXPECT_EQ(r2.size, 21u);
    expect_level(r2.levels[0], 3720250000000, 3720500000000, 21, 22, 13, 15);
  }
}

TEST(DbnFixtures, TradesAllVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const Variant& v : glbx_variants("trades")) {
    SCOPED_TRACE(v.path);
    Decoded d = decode_all(fixture(v.path));
    expect_glbx_metadata(d.md, v.version, Schema::kTrades);
    ASSERT_EQ(d.records.size(), 2u);
    auto r = as<TradeMsg>(d.records[0]);
    EXPECT_EQ(r.hd.rtype, kRTypeMbp0);
    EXPECT_EQ(r.hd.length, 12);
    EXPECT_EQ(r.hd.instrument_id, 5482u);
    EXPECT_EQ(r.hd.ts_event, 1609160400098821953ull);
    EXPECT_EQ(r.price, 3720250000000);
    EXPECT_EQ(r.size, 5u);
    EXPECT_EQ(r.action, 'T');
    EXPECT_EQ(r.side, 'A');
    EXPECT_EQ(r.flags, 129);
    EXPECT_EQ(r.depth, 0);
    EXPECT_EQ(r.ts_recv, 1609160400099150057ull);
    EXPECT_EQ(r.ts_in_delta, 19251);
    EXPECT_EQ(r.sequence, 1170380u);
    EXPECT_EQ(as<TradeMsg>(d.records[1]).size, 21u);
  }
}

// The same records decode identically from every version and container.
TEST(DbnFixtures, RecordsIdenticalAcrossVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const char* schema : {"mbp-10", "mbp-1", "tbbo", "trades"}) {
    auto variants = glbx_variants(schema);
    Decoded first = decode_all(fixture(variants[0].path));
    for (const Variant& v : variants) {
      SCOPED_TRACE(v.path);
      EXPECT_EQ(decode_all(fixture(v.path)).records, first.records);
    }
  }
}

// ---- definitions ------------------------------------------------------------------------

void expect_msft(const InstrumentDef& d, uint32_t id, uint64_t ts_recv) {
  EXPECT_EQ(d.instrument_id, id);
  EXPECT_EQ(d.ts_recv, ts_recv);
  EXPECT_EQ(d.raw_symbol, "MSFT");
  EXPECT_EQ(d.exchange, "XNAS");
  EXPECT_EQ(d.group, "pxnas-1");
  EXPECT_EQ(d.currency, "");
  EXPECT_EQ(d.min_price_increment, INT64_MAX);
  EXPECT_EQ(d.display_factor, 100000000000000);
  EXPECT_EQ(d.expiration, -1);  // UNDEF_TIMESTAMP
  EXPECT_EQ(d.unit_of_measure_qty, INT64_MAX);
  EXPECT_EQ(d.contract_multiplier, INT32_MAX);
  EXPECT_EQ(d.instrument_class, 'K');  // stock
}

TEST(DbnFixtures, DefinitionFilesAllVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string dbn = kDbnDir;
  std::vector<Variant> variants = {{dbn + "test_data.definition.dbn", 2},
                                   {dbn + "test_data.definition.v1.dbn.zst", 1},
                                   {dbn + "test_data.definition.v2.dbn.zst", 2},
                                   {dbn + "test_data.definition.v3.dbn.zst", 3},
                                   {std::string(kCppDir) + "test_data.definition.v1.dbn", 1}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.path);
    Decoded d = decode_all(fixture(v.path));
    EXPECT_EQ(d.md.version, v.version);
    EXPECT_EQ(d.md.dataset, "XNAS.ITCH");
    EXPECT_EQ(d.md.schema, Schema::kDefinition);
    EXPECT_EQ(d.md.stype_in, 1);
    ASSERT_EQ(d.md.symbols.size(), 1u);
    EXPECT_EQ(d.md.symbols[0], "MSFT");
    ASSERT_EQ(d.records.size(), 2u);
    EXPECT_EQ(d.records[0].size(), definition_size(v.version));
    ASSERT_EQ(d.defs.size(), 2u);
    expect_msft(d.defs[0], 6819, 1633331241618029519ull);
    expect_msft(d.defs[1], 6830, 1633417621703120931ull);
  }
}

// Records-only streams: CME options definitions, the same two records in v1, v2, v3.
TEST(DbnFixtures, DefinitionFragmentsAllVersions) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string dbn = kDbnDir;
  std::vector<Variant> variants = {{dbn + "test_data.definition.v1.dbn.frag", 1},
                                   {dbn + "test_data.definition.v2.dbn.frag", 2},
                                   {dbn + "test_data.definition.v3.dbn.frag", 3},
                                   {dbn + "test_data.definition.v1.dbn.frag.zst", 1},
                                   {dbn + "test_data.definition.v3.dbn.frag.zst", 3},
                                   {dbn + "test_data.definition.dbn.frag.zst", 2},
                                   {dbn + "multi-frame.definition.v1.dbn.frag.zst", 1}};
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.path);
    Decoded d = decode_all(fixture(v.path), ReaderOptions{v.version});
    EXPECT_EQ(d.md.version, v.version);
    bool multi = v.path.find("multi-frame") != std::string::npos;
    ASSERT_EQ(d.defs.size(), multi ? 8u : 2u);
    const InstrumentDef& ge = d.defs[0];
    EXPECT_EQ(ge.instrument_id, 31778u);
    EXPECT_EQ(ge.ts_recv, 1609088526709105557ull);
    EXPECT_EQ(ge.raw_symbol, "GEM3 P9812");
    EXPECT_EQ(ge.currency, "USD");
    EXPECT_EQ(ge.group, "ZE");
    EXPECT_EQ(ge.exchange, "XCME");
    EXPECT_EQ(ge.asset, "GE");
    EXPECT_EQ(ge.security_type, "OOF");
    EXPECT_EQ(ge.unit_of_measure, "USD");
    EXPECT_EQ(ge.min_price_increment, 500000000);
    EXPECT_EQ(ge.display_factor, 1000000000);
    EXPECT_EQ(ge.expiration, 1687168800000000000);
    EXPECT_EQ(ge.unit_of_measure_qty, 2500000000000);
    EXPECT_EQ(ge.instrument_class, 'P');
    const InstrumentDef& es = d.defs[1];
    EXPECT_EQ(es.instrument_id, 688141u);
    EXPECT_EQ(es.raw_symbol, "ESH1 P2250");
    EXPECT_EQ(es.asset, "ES");
    EXPECT_EQ(es.group, "EW");
    EXPECT_EQ(es.unit_of_measure, "IPNT");
    EXPECT_EQ(es.unit_of_measure_qty, 50000000000);
    EXPECT_EQ(es.display_factor, 10000000);
    EXPECT_EQ(es.expiration, 1616160600000000000);
    if (multi) {
      EXPECT_EQ(d.defs[2].raw_symbol, "EX2F1 P3620");
      EXPECT_EQ(d.defs[2].instrument_id, 458765u);
    }
  }
}

// The ESH1 future itself (databento-python, v3): tick 0.25, index points, 50 per point.
TEST(DbnFixtures, Esh1DefinitionV3) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  Decoded d = decode_all(fixture(std::string(kPyDir) + "GLBX.MDP3/test_data.definition.dbn.zst"));
  ASSERT_EQ(d.defs.size(), 1u);
  const InstrumentDef& es = d.defs[0];
  EXPECT_EQ(es.instrument_id, 5482u);
  EXPECT_EQ(es.ts_recv, 1609113600000000000ull);
  EXPECT_EQ(es.raw_symbol, "ESH1");
  EXPECT_EQ(es.currency, "USD");
  EXPECT_EQ(es.min_price_increment, 250000000);
  EXPECT_EQ(es.display_factor, 10000000);
  EXPECT_EQ(es.unit_of_measure, "IPNT");
  EXPECT_EQ(es.unit_of_measure_qty, 50000000000);
  EXPECT_EQ(es.expiration, 1616160600000000000);
  EXPECT_EQ(es.exchange, "XCME");
  EXPECT_EQ(es.asset, "ES");
  EXPECT_EQ(es.group, "ES");
  EXPECT_EQ(es.security_type, "FUT");
  EXPECT_EQ(es.instrument_class, 'F');
  EXPECT_EQ(es.contract_multiplier, INT32_MAX);
}

// ---- databento-python: v3, several venues ---------------------------------------------------

TEST(DbnFixtures, PythonDatasetsV3) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  struct Expect {
    const char* schema;
    Schema id;
    uint8_t rtype;
    size_t size;
  };
  const Expect kSchemas[] = {{"mbp-1", Schema::kMbp1, kRTypeMbp1, 80},
                             {"mbp-10", Schema::kMbp10, kRTypeMbp10, 368},
                             {"tbbo", Schema::kTbbo, kRTypeMbp1, 80},
                             {"trades", Schema::kTrades, kRTypeMbp0, 48},
                             {"definition", Schema::kDefinition, kRTypeDefinition, 520}};
  int files = 0;
  for (const char* dataset :
       {"GLBX.MDP3", "XNAS.ITCH", "IFEU.IMPACT", "NDEX.IMPACT", "OPRA.PILLAR", "EQUS.MINI"}) {
    for (const Expect& e : kSchemas) {
      std::string path =
          fixture(std::string(kPyDir) + dataset + "/test_data." + e.schema + ".dbn.zst");
      if (!fs::exists(path)) continue;  // OPRA and EQUS have no mbp-10
      SCOPED_TRACE(path);
      ++files;
      Decoded d = decode_all(path);
      EXPECT_EQ(d.md.version, 3);
      EXPECT_EQ(d.md.dataset, dataset);
      EXPECT_EQ(d.md.schema, e.id);
      EXPECT_FALSE(d.md.ts_out);
      ASSERT_EQ(d.records.size(), e.id == Schema::kDefinition ? 1u : 4u);
      uint64_t prev_ts = 0;
      for (const std::string& r : d.records) {
        auto hd = as<RecordHeader>(r);
        EXPECT_EQ(hd.rtype, e.rtype);
        EXPECT_EQ(r.size(), e.size);
        EXPECT_GT(hd.instrument_id, 0u);
        if (e.rtype == kRTypeDefinition) continue;       // ICE definitions carry ts_event 0
        EXPECT_GT(hd.ts_event, 1500000000000000000ull);  // after 2017
        EXPECT_LT(hd.ts_event, 1900000000000000000ull);
        auto m = as<TradeMsg>(r);
        EXPECT_GE(m.ts_recv, prev_ts);  // index timestamp is sorted
        prev_ts = m.ts_recv;
        EXPECT_GT(m.price, 0);
        EXPECT_TRUE(m.side == 'A' || m.side == 'B' || m.side == 'N') << m.side;
        EXPECT_NE(std::strchr("ACMRTFN", m.action), nullptr) << m.action;
        if (e.rtype != kRTypeMbp0) {
          auto l = as<Mbp1Msg>(r).levels[0];
          if (l.bid_px != INT64_MAX && l.ask_px != INT64_MAX) {
            EXPECT_LE(l.bid_px, l.ask_px);
          }
        }
      }
      for (const InstrumentDef& def : d.defs) {
        EXPECT_GT(def.ts_recv, 1500000000000000000ull);
        EXPECT_FALSE(def.raw_symbol.empty());
        EXPECT_NE(def.instrument_class, 0);
      }
    }
  }
  EXPECT_EQ(files, 28);
}

TEST(DbnFixtures, PythonDefinitionsPerVenue) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  auto def = [](const char* dataset) {
    Decoded d =
        decode_all(fixture(std::string(kPyDir) + dataset + "/test_data.definition.dbn.zst"));
    EXPECT_EQ(d.defs.size(), 1u);
    return d.defs.empty() ? InstrumentDef{} : d.defs[0];
  };
  InstrumentDef brent = def("IFEU.IMPACT");
  EXPECT_EQ(brent.raw_symbol, "BRN FMJ0024!");
  EXPECT_EQ(brent.exchange, "IFEU");
  EXPECT_EQ(brent.unit_of_measure, "bbl");
  EXPECT_EQ(brent.min_price_increment, 10000000);  // $0.01
  EXPECT_EQ(brent.instrument_class, 'F');
  InstrumentDef ttf = def("NDEX.IMPACT");
  EXPECT_EQ(ttf.currency, "EUR");
  EXPECT_EQ(ttf.unit_of_measure, "MWh");
  InstrumentDef opt = def("OPRA.PILLAR");
  EXPECT_EQ(opt.raw_symbol, "AAPL  250221C00250000");
  EXPECT_EQ(opt.asset, "AAPL");
  EXPECT_EQ(opt.security_type, "OPT");
  EXPECT_EQ(opt.instrument_class, 'C');
  EXPECT_EQ(def("XNAS.ITCH").raw_symbol, "NVDA");
  EXPECT_EQ(def("EQUS.MINI").raw_symbol, "QQQ");
}

// ---- nautilus_trader: larger real CME files (DBN v1, zstd) ------------------------------------

TEST(DbnFixtures, NautilusCmeFiles) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string dir = "nautilus_trader/tests/test_data/databento/";
  struct Expect {
    std::string file;
    Schema schema;
    size_t records;
  };
  const Expect kFiles[] = {
      {"esh4-glbx-mdp3-20231224.mbo.dbn.zst", Schema::kMbo, 8725},
      {"esh4-glbx-mdp3-20231225.mbo.dbn.zst", Schema::kMbo, 68792},
      {"order_book_deltas_catalog/databento/"
       "orderbooks_mbo_2024-05-08T00-00-00_2024-05-08T00-00-02.dbn.zst",
       Schema::kMbo, 13796},
      {"historical_bars_catalog/databento/futures_mbp-1_2024-07-01T23-58_2024-07-02T00-02.dbn.zst",
       Schema::kMbp1, 2288},
      {"historical_bars_catalog/databento/futures_trades_2024-07-01T23-58_2024-07-02T00-02.dbn.zst",
       Schema::kTrades, 120},
      {"definition-glbx-es-fut.dbn.zst", Schema::kDefinition, 2},
  };
  for (const Expect& e : kFiles) {
    SCOPED_TRACE(e.file);
    Decoded d = decode_all(fixture(dir + e.file));
    EXPECT_EQ(d.md.version, 1);
    EXPECT_EQ(d.md.dataset, "GLBX.MDP3");
    EXPECT_EQ(d.md.schema, e.schema);
    EXPECT_EQ(d.records.size(), e.records);
    for (const std::string& r : d.records) {
      EXPECT_EQ(as<RecordHeader>(r).publisher_id, 1);
      if (e.schema == Schema::kMbo) {
        auto m = as<MboMsg>(r);
        ASSERT_EQ(m.hd.rtype, kRTypeMbo);
        ASSERT_NE(std::strchr("ACMRTFN", m.action), nullptr) << m.action;
      }
    }
  }
  // The 2023-12-25 file opens with a snapshot run of adds (F_SNAPSHOT, no F_LAST).
  Decoded mbo = decode_all(fixture(dir + "esh4-glbx-mdp3-20231225.mbo.dbn.zst"));
  ASSERT_FALSE(mbo.records.empty());
  auto first = as<MboMsg>(mbo.records[0]);
  EXPECT_EQ(first.hd.instrument_id, 17077u);
  EXPECT_EQ(first.order_id, 6412777162812u);
  EXPECT_EQ(first.price, 4799000000000);
  EXPECT_EQ(first.size, 2u);
  EXPECT_EQ(first.flags, kFSnapshot | kFBadTsRecv);
  EXPECT_EQ(first.action, 'A');
  EXPECT_EQ(first.side, 'B');
  EXPECT_EQ(first.ts_recv, 1703462400000000000ull);
  EXPECT_EQ(first.sequence, 682u);

  Decoded defs = decode_all(fixture(dir + "definition-glbx-es-fut.dbn.zst"));
  ASSERT_EQ(defs.defs.size(), 2u);
  for (const InstrumentDef& es : defs.defs) {
    EXPECT_EQ(es.instrument_id, 95414u);
    EXPECT_EQ(es.raw_symbol, "ESM3");
    EXPECT_EQ(es.min_price_increment, 250000000);
    EXPECT_EQ(es.unit_of_measure, "IPNT");
    EXPECT_EQ(es.unit_of_measure_qty, 50000000000);
    EXPECT_EQ(es.expiration, 1686922200000000000);
    EXPECT_EQ(es.instrument_class, 'F');
  }
  Decoded nq =
      decode_all(fixture(dir + "historical_bars_catalog/databento/futures_definition.dbn.zst"));
  ASSERT_EQ(nq.defs.size(), 2u);
  EXPECT_EQ(nq.defs[0].raw_symbol, "ESU4");
  EXPECT_EQ(nq.defs[1].raw_symbol, "NQU4");
  EXPECT_EQ(nq.defs[1].unit_of_measure_qty, 20000000000);
}

// ---- rejected inputs ------------------------------------------------------------------------

TEST(DbnReader, LegacyDbzRejected) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const char* schema : {"mbp-1", "mbp-10", "tbbo", "trades", "definition"}) {
    std::string path = fixture(std::string(kDbnDir) + "test_data." + schema + ".dbz");
    auto r = Reader::open(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(r.status().exit_code(), 2);
    EXPECT_EQ(r.status().message(),
              path +
                  ": offset 0: legacy .dbz format is not supported (re-encode it with "
                  "databento's dbn CLI as DBN)");
  }
  const uint8_t raw_dbz[] = {'D', 'B', 'Z', 1, 0, 0, 0, 0};
  auto r = Reader::open_memory("x.dbz", raw_dbz, sizeof(raw_dbz));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("legacy .dbz"), std::string::npos);
}

TEST(DbnReader, FragmentNeedsVersion) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  for (const char* name :
       {"test_data.definition.v1.dbn.frag", "test_data.definition.dbn.frag.zst"}) {
    std::string path = fixture(std::string(kDbnDir) + name);
    auto r = Reader::open(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(r.status().message().rfind(path + ": offset 0: ", 0), 0u) << r.status().message();
    EXPECT_NE(r.status().message().find("--dbn-version"), std::string::npos);
  }
  // A v2 fragment read as v3: its 400-byte definitions are shorter than the v3 layout.
  auto r = Reader::open(fixture(std::string(kDbnDir) + "test_data.definition.v2.dbn.frag"),
                        ReaderOptions{3});
  ASSERT_TRUE(r.ok());
  RecordRef rec;
  EXPECT_FALSE(r->next(&rec));
  EXPECT_NE(r->status().message().find("offset 0: definition record (rtype 0x13) is 400 bytes, "
                                       "shorter than its 520-byte layout"),
            std::string::npos)
      << r->status().message();
  auto bad = Reader::open_memory("f", nullptr, 0, ReaderOptions{4});
  EXPECT_EQ(bad.status().code(), StatusCode::kUsage);
}

std::string read_bytes(const std::string& path) {
  auto b = read_file(path);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? *b : std::string();
}

Status open_and_drain(const std::string& bytes, ReaderOptions options = {}) {
  auto r = Reader::open_memory("mem.dbn", reinterpret_cast<const uint8_t*>(bytes.data()),
                               bytes.size(), options);
  if (!r.ok()) return r.status();
  RecordRef rec;
  while (r->next(&rec)) {
  }
  return r->status();
}

TEST(DbnReader, UnsupportedVersionAndBadLengths) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string good = read_bytes(fixture(std::string(kDbnDir) + "test_data.mbp-10.dbn"));
  for (int v : {0, 4, 9, 255}) {
    std::string b = good;
    b[3] = static_cast<char>(v);
    EXPECT_EQ(open_and_drain(b).message(),
              fmt::format("mem.dbn: offset 3: unsupported DBN version {} (expected 1, 2 or 3)", v));
  }
  std::string huge = good;
  for (uint32_t len : {0xFFFFFFFFu, static_cast<uint32_t>(good.size()), 10u}) {
    std::memcpy(huge.data() + 4, &len, 4);
    Status s = open_and_drain(huge);
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
    EXPECT_EQ(s.message().rfind("mem.dbn: offset 4: metadata length", 0), 0u) << s.message();
  }
  size_t rec0 = 8 + 345;
  std::string zero = good;
  zero[rec0] = 0;
  EXPECT_EQ(open_and_drain(zero).message(),
            "mem.dbn: offset 353: record length is 0, expected at least 4 words (16-byte header)");
  std::string shortrec = good;
  shortrec[rec0] = 20;  // an 80-byte mbp-10
  EXPECT_NE(open_and_drain(shortrec).message().find(
                "offset 353: mbp-10 record (rtype 0x0A) is 80 bytes, shorter than its 368-byte"),
            std::string::npos);
  std::string cut = good.substr(0, good.size() - 5);
  EXPECT_EQ(open_and_drain(cut).message(),
            "mem.dbn: offset 721: record of 368 bytes is cut off by the end of the input (363 "
            "bytes left)");
  std::string sdl = good;
  sdl[8 + 100] = 1;
  EXPECT_EQ(open_and_drain(sdl).message(),
            "mem.dbn: offset 108: schema_definition_length is 1, expected 0");
  EXPECT_EQ(open_and_drain("").message(),
            "mem.dbn: offset 0: empty input, expected a DBN prelude (\"DBN\")");
  auto missing = Reader::open("/nonexistent/x.dbn");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(DbnReader, TruncatedZstd) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string z = read_bytes(fixture(std::string(kDbnDir) + "test_data.mbp-10.v3.dbn.zst"));
  Status s = open_and_drain(z.substr(0, z.size() - 3));
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("mem.dbn: offset "), std::string::npos) << s.message();
  Status garbage = open_and_drain(z + "xyz!");
  EXPECT_FALSE(garbage.ok());
  EXPECT_NE(garbage.message().find("offset"), std::string::npos);
}

// ---- writer ---------------------------------------------------------------------------------

Metadata sample_metadata(uint8_t version) {
  Metadata md;
  md.version = version;
  md.dataset = "GLBX.MDP3";
  md.schema = Schema::kMixed;
  md.start = 1609160400000000000ull;
  md.end = 1609200000000000000ull;
  md.limit = 0;
  md.record_count = version == 1 ? 7 : 0;
  md.stype_in = 1;
  md.stype_out = 0;
  md.symbols = {"ESH1", "NQH1"};
  md.partial = {"CLH1"};
  md.not_found = {"XXX"};
  SymbolMapping m;
  m.raw_symbol = "ESH1";
  m.intervals = {{20201228, 20201229, "5482"}, {20201229, 20201230, "5483"}};
  md.mappings = {m};
  return md;
}

struct SampleRecords {
  TradeMsg trade{};
  Mbp1Msg mbp1{};
  Mbp10Msg mbp10{};
  MboMsg mbo{};
  uint8_t ohlcv[56] = {};         // an rtype the reader does not know: skipped by length
  uint8_t trade_ts_out[56] = {};  // a trade with the ts_out suffix
  InstrumentDef def;
};

SampleRecords sample_records() {
  SampleRecords s;
  init_header(&s.trade, kRTypeMbp0, 1, 5482, 100);
  s.trade.price = 3720250000000;
  s.trade.size = 5;
  s.trade.action = 'T';
  s.trade.side = 'A';
  s.trade.flags = 129;
  s.trade.ts_recv = 101;
  s.trade.ts_in_delta = -7;
  s.trade.sequence = 9;
  init_header(&s.mbp1, kRTypeMbp1, 1, 5482, 200);
  s.mbp1.levels[0] = {1, 2, 3, 4, 5, 6};
  s.mbp1.action = 'A';
  init_header(&s.mbp10, kRTypeMbp10, 1, 5482, 300);
  for (int64_t i = 0; i < 10; ++i) {
    s.mbp10.levels[i] = {3720000000000 - i * 250000000,
                         3720250000000 + i * 250000000,
                         static_cast<uint32_t>(i + 1),
                         static_cast<uint32_t>(2 * i + 1),
                         1,
                         2};
  }
  s.mbp10.depth = 3;
  init_header(&s.mbo, kRTypeMbo, 1, 5482, 400);
  s.mbo.order_id = 123456789;
  s.mbo.price = 3720000000000;
  s.mbo.size = 3;
  s.mbo.flags = kFLast;
  s.mbo.channel_id = 2;
  s.mbo.action = 'A';
  s.mbo.side = 'B';
  s.mbo.ts_recv = 401;
  s.ohlcv[0] = 14;
  s.ohlcv[1] = 0x21;  // ohlcv-1m
  s.ohlcv[20] = 0x42;
  std::memcpy(s.trade_ts_out, &s.trade, sizeof(TradeMsg));
  s.trade_ts_out[0] = 14;
  uint64_t ts_out = 123456;
  std::memcpy(s.trade_ts_out + 48, &ts_out, 8);
  s.def.instrument_id = 5482;
  s.def.ts_event = 500;
  s.def.ts_recv = 501;
  s.def.min_price_increment = 250000000;
  s.def.display_factor = 10000000;
  s.def.unit_of_measure_qty = 50000000000;
  s.def.expiration = 1616160600000000000;
  s.def.contract_multiplier = 7;
  s.def.raw_symbol = "ESH1";
  s.def.currency = "USD";
  s.def.unit_of_measure = "IPNT";
  s.def.exchange = "XCME";
  s.def.asset = "ES";
  s.def.group = "ES";
  s.def.security_type = "FUT";
  s.def.instrument_class = 'F';
  return s;
}

void expect_same_def(const InstrumentDef& a, const InstrumentDef& b) {
  EXPECT_EQ(a.instrument_id, b.instrument_id);
  EXPECT_EQ(a.ts_event, b.ts_event);
  EXPECT_EQ(a.ts_recv, b.ts_recv);
  EXPECT_EQ(a.min_price_increment, b.min_price_increment);
  EXPECT_EQ(a.display_factor, b.display_factor);
  EXPECT_EQ(a.unit_of_measure_qty, b.unit_of_measure_qty);
  EXPECT_EQ(a.expiration, b.expiration);
  EXPECT_EQ(a.contract_multiplier, b.contract_multiplier);
  EXPECT_EQ(a.raw_symbol, b.raw_symbol);
  EXPECT_EQ(a.currency, b.currency);
  EXPECT_EQ(a.unit_of_measure, b.unit_of_measure);
  EXPECT_EQ(a.exchange, b.exchange);
  EXPECT_EQ(a.asset, b.asset);
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.security_type, b.security_type);
  EXPECT_EQ(a.instrument_class, b.instrument_class);
}

TEST(DbnWriter, RoundTripEveryVersionAndContainer) {
  SampleRecords s = sample_records();
  std::string dir = test::scratch_dir();
  for (uint8_t version : {uint8_t{1}, uint8_t{2}, uint8_t{3}}) {
    for (bool zstd : {false, true}) {
      SCOPED_TRACE(fmt::format("v{} zstd={}", version, zstd));
      std::string path = fmt::format("{}/rt-v{}{}", dir, version, zstd ? ".dbn.zst" : ".dbn");
      Metadata md = sample_metadata(version);
      auto w = Writer::create(path, md, WriterOptions{zstd, 3, version});
      ASSERT_TRUE(w.ok()) << w.status().message();
      ASSERT_TRUE(w->write(&s.trade).ok());
      ASSERT_TRUE(w->write(&s.mbp1).ok());
      ASSERT_TRUE(w->write(&s.mbp10).ok());
      ASSERT_TRUE(w->write(&s.mbo).ok());
      ASSERT_TRUE(w->write(s.ohlcv).ok());
      ASSERT_TRUE(w->write(s.trade_ts_out).ok());
      ASSERT_TRUE(w->write_definition(s.def).ok());
      EXPECT_EQ(w->records_written(), 7u);
      EXPECT_FALSE(fs::exists(path));  // committed only on close
      ASSERT_TRUE(w->close().ok());
      EXPECT_FALSE(w->close().ok());
      ASSERT_TRUE(fs::exists(path));
      std::string bytes = read_bytes(path);
      if (zstd) {
        EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 0x28);
      } else {
        EXPECT_EQ(bytes.substr(0, 3), "DBN");
        EXPECT_EQ(bytes[3], static_cast<char>(version));
        uint32_t len;
        std::memcpy(&len, bytes.data() + 4, 4);
        if (version == 3) {
          EXPECT_EQ((8 + len) % 8, 0u);
        }
      }

      Decoded d = decode_all(path);
      EXPECT_EQ(d.md.version, version);
      EXPECT_EQ(d.md.dataset, md.dataset);
      EXPECT_EQ(d.md.schema, Schema::kMixed);
      EXPECT_EQ(d.md.start, md.start);
      EXPECT_EQ(d.md.end, md.end);
      EXPECT_EQ(d.md.record_count, md.record_count);
      EXPECT_EQ(d.md.symbols, md.symbols);
      EXPECT_EQ(d.md.partial, md.partial);
      EXPECT_EQ(d.md.not_found, md.not_found);
      ASSERT_EQ(d.md.mappings.size(), 1u);
      ASSERT_EQ(d.md.mappings[0].intervals.size(), 2u);
      EXPECT_EQ(d.md.mappings[0].intervals[1].symbol, "5483");
      EXPECT_EQ(d.md.mappings[0].intervals[1].start_date, 20201229u);
      ASSERT_EQ(d.records.size(), 7u);
      EXPECT_EQ(d.records[0], std::string(reinterpret_cast<char*>(&s.trade), sizeof(s.trade)));
      EXPECT_EQ(d.records[1], std::string(reinterpret_cast<char*>(&s.mbp1), sizeof(s.mbp1)));
      EXPECT_EQ(d.records[2], std::string(reinterpret_cast<char*>(&s.mbp10), sizeof(s.mbp10)));
      EXPECT_EQ(d.records[3], std::string(reinterpret_cast<char*>(&s.mbo), sizeof(s.mbo)));
      EXPECT_EQ(d.records[4], std::string(reinterpret_cast<char*>(s.ohlcv), 56));
      EXPECT_EQ(d.records[5], std::string(reinterpret_cast<char*>(s.trade_ts_out), 56));
      EXPECT_EQ(d.records[6].size(), definition_size(version));
      ASSERT_EQ(d.defs.size(), 1u);
      expect_same_def(d.defs[0], s.def);
    }
  }
}

// Decoding a fixture and writing it again at its version gives back the same bytes.
TEST(DbnWriter, ReencodesFixturesByteForByte) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string dir = test::scratch_dir();
  std::vector<std::string> files;
  for (const char* schema : {"mbp-10", "mbp-1", "tbbo", "trades", "definition"}) {
    std::string s = schema;
    files.push_back(std::string(kDbnDir) + "test_data." + s + ".dbn");
    for (const char* v : {".v1", ".v2", ".v3"}) {
      files.push_back(std::string(kDbnDir) + "test_data." + s + v + ".dbn.zst");
    }
    files.push_back(std::string(kCppDir) + "test_data." + s + ".v1.dbn");
    files.push_back(std::string(kPyDir) + "GLBX.MDP3/test_data." + s + ".dbn.zst");
  }
  int n = 0;
  for (const std::string& rel : files) {
    std::string path = fixture(rel);
    if (!fs::exists(path)) continue;
    SCOPED_TRACE(path);
    ++n;
    std::string original = rel.ends_with(".zst") ? zstd_decompress(path) : read_bytes(path);
    Decoded d = decode_all(path);
    std::string out = fmt::format("{}/re{}.dbn", dir, n);
    auto w = Writer::create(out, d.md, WriterOptions{false, 3, d.md.version});
    ASSERT_TRUE(w.ok()) << w.status().message();
    for (const std::string& r : d.records) ASSERT_TRUE(w->write(r.data()).ok());
    ASSERT_TRUE(w->close().ok());
    std::string again = read_bytes(out);
    EXPECT_EQ(again.size(), original.size());
    EXPECT_TRUE(again == original);
    // And compressed: decodes to the same metadata and records.
    std::string zout = out + ".zst";
    auto wz = Writer::create(zout, d.md, WriterOptions{true, 19, d.md.version});
    ASSERT_TRUE(wz.ok());
    for (const std::string& r : d.records) ASSERT_TRUE(wz->write(r.data()).ok());
    ASSERT_TRUE(wz->close().ok());
    EXPECT_EQ(zstd_decompress(zout), original);
    EXPECT_EQ(decode_all(zout).records, d.records);
  }
  EXPECT_EQ(n, 30);
}

TEST(DbnWriter, DefinitionEncodedPerVersionMatchesFixtureFields) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  Decoded src = decode_all(fixture(std::string(kDbnDir) + "test_data.definition.v1.dbn.frag"),
                           ReaderOptions{1});
  ASSERT_EQ(src.defs.size(), 2u);
  std::string dir = test::scratch_dir();
  for (uint8_t version : {uint8_t{1}, uint8_t{2}, uint8_t{3}}) {
    std::string path = fmt::format("{}/def-v{}.dbn", dir, version);
    auto w = Writer::create(path, sample_metadata(version), WriterOptions{false, 3, version});
    ASSERT_TRUE(w.ok());
    for (const InstrumentDef& def : src.defs) ASSERT_TRUE(w->write_definition(def).ok());
    ASSERT_TRUE(w->close().ok());
    Decoded d = decode_all(path);
    ASSERT_EQ(d.defs.size(), 2u);
    for (size_t i = 0; i < 2; ++i) expect_same_def(d.defs[i], src.defs[i]);
  }
}

TEST(DbnWriter, RejectsBadRecordsAndMetadata) {
  std::string dir = test::scratch_dir();
  auto w = Writer::create(dir + "/bad.dbn", sample_metadata(3), WriterOptions{false, 3, 3});
  ASSERT_TRUE(w.ok());
  uint8_t zero[64] = {};
  Status s = w->write(zero);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("offset"), std::string::npos);
  Mbp10Msg mbp10{};
  init_header(&mbp10, kRTypeMbp10, 1, 1, 1);
  mbp10.hd.length = 20;
  EXPECT_FALSE(w->write(&mbp10).ok());
  uint8_t def_v1[360] = {};
  def_v1[0] = 90;
  def_v1[1] = kRTypeDefinition;
  EXPECT_FALSE(w->write(def_v1).ok());  // a v1 definition is too short for a v3 file
  InstrumentDef long_symbol;
  long_symbol.raw_symbol = std::string(80, 'X');
  EXPECT_FALSE(w->write_definition(long_symbol).ok());
  EXPECT_EQ(w->records_written(), 0u);

  Metadata md = sample_metadata(1);
  md.symbols.push_back(std::string(30, 'S'));  // fits v2 (71), not v1 (22)
  EXPECT_FALSE(Writer::create(dir + "/v1.dbn", md, WriterOptions{false, 3, 1}).ok());
  EXPECT_TRUE(Writer::create(dir + "/v2.dbn", md, WriterOptions{false, 3, 2}).ok());
  EXPECT_EQ(Writer::create(dir + "/v4.dbn", md, WriterOptions{false, 3, 4}).status().code(),
            StatusCode::kUsage);
  EXPECT_FALSE(fs::exists(dir + "/v2.dbn"));  // never closed: nothing left behind
}

// Records straddling the decompression window and several zstd frames.
TEST(DbnReader, ZstdWindowRefillsAndMultipleFrames) {
  std::string dir = test::scratch_dir();
  SampleRecords s = sample_records();
  std::mt19937_64 rng(42);
  std::string plain_path = dir + "/big.dbn";
  auto w = Writer::create(plain_path, sample_metadata(3), WriterOptions{false, 3, 3});
  ASSERT_TRUE(w.ok());
  size_t n = 40000;
  for (size_t i = 0; i < n; ++i) {
    switch (rng() % 5) {
      case 0:
        s.trade.sequence = static_cast<uint32_t>(i);
        ASSERT_TRUE(w->write(&s.trade).ok());
        break;
      case 1:
        s.mbp1.sequence = static_cast<uint32_t>(i);
        ASSERT_TRUE(w->write(&s.mbp1).ok());
        break;
      case 2:
        s.mbp10.sequence = static_cast<uint32_t>(i);
        ASSERT_TRUE(w->write(&s.mbp10).ok());
        break;
      case 3:
        s.mbo.sequence = static_cast<uint32_t>(i);
        ASSERT_TRUE(w->write(&s.mbo).ok());
        break;
      default:
        s.def.instrument_id = static_cast<uint32_t>(i);
        ASSERT_TRUE(w->write_definition(s.def).ok());
    }
  }
  ASSERT_TRUE(w->close().ok());
  std::string plain = read_bytes(plain_path);
  ASSERT_GT(plain.size(), size_t{8} << 20);  // larger than two decompression windows

  // Several frames split at arbitrary (not record-aligned) points.
  std::string multi;
  size_t cuts[] = {0, 1001, 3 << 20, (3 << 20) + 77, plain.size()};
  for (int i = 0; i + 1 < 5; ++i) {
    std::string part = plain.substr(cuts[i], cuts[i + 1] - cuts[i]);
    std::string frame(ZSTD_compressBound(part.size()), '\0');
    size_t z = ZSTD_compress(frame.data(), frame.size(), part.data(), part.size(), 1);
    ASSERT_FALSE(ZSTD_isError(z));
    multi.append(frame.data(), z);
  }
  Decoded expected = decode_all(plain_path);
  ASSERT_EQ(expected.records.size(), n);
  auto r = Reader::open_memory("multi.dbn.zst", reinterpret_cast<const uint8_t*>(multi.data()),
                               multi.size());
  ASSERT_TRUE(r.ok()) << r.status().message();
  RecordRef rec;
  size_t i = 0;
  uint64_t offset = 8 + 0;
  while (r->next(&rec)) {
    ASSERT_LT(i, n);
    ASSERT_EQ(std::string(reinterpret_cast<const char*>(rec.header), rec.size()),
              expected.records[i]);
    if (i == 0) offset = rec.offset;
    EXPECT_EQ(rec.offset, offset);
    offset += rec.size();
    ++i;
  }
  EXPECT_TRUE(r->status().ok()) << r->status().message();
  EXPECT_EQ(i, n);
  EXPECT_EQ(r->bytes_consumed(), plain.size());
  EXPECT_EQ(r->file_size(), multi.size());
}

}  // namespace
}  // namespace fxt::dbn
