// Every real source in ../shared/data becomes a store, and `fxt inspect --json` reports
// its counts. Expected values were checked against the sources' own documentation
// (../shared/data/README.md) and against independent counts of the raw files.
#include <filesystem>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace fxt {
namespace {
using test::run_fxt;

nlohmann::json ingest_and_inspect(const std::string& sources, const std::string& name) {
  std::string store = test::scratch_dir() + "/" + name;
  auto in = run_fxt("-q ingest " + sources + " --out " + store);
  EXPECT_EQ(in.exit_code, 0) << in.output;
  auto r = run_fxt("inspect --json " + store);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.output;
  std::printf("[ %s ] %s\n", name.c_str(), j["counts"].dump().c_str());
  return j;
}

std::string data(const std::string& rel) {
  return test::shared_file(rel);
}

struct Expected {
  const char* name;
  std::vector<std::string> files;
  const char* format;
  uint64_t snapshots, trades, order_events, crossed, locked;
};

TEST(IngestReal, EverySourceBecomesAStore) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt = "nautilus_trader/tests/test_data/databento/";
  const std::string fx = "dbn-fixtures/databento-dbn/tests/data/";
  const std::string bn = "binance-hftbacktest/examples/";
  const std::string lob = "lobster-YileZheng-OrderBook_HLS/data/AAPL_2012-06-21_34200000_57600000_";
  // The 2023-12-24 file is one opening snapshot run (8,725 adds, no F_LAST): one snapshot.
  // The 2023-12-25 book is crossed in CME pre-open (891 snapshots): kept and flagged.
  // The mbp-1 file's 120 trades are exactly the 120 records of the matching trades file.
  const std::vector<Expected> cases = {
      {"es-mbo-20231224",
       {nt + "esh4-glbx-mdp3-20231224.mbo.dbn.zst", nt + "definition-glbx-es-fut.dbn.zst"},
       "dbn-mbo",
       1,
       0,
       8725,
       0,
       0},
      {"es-mbo-20231225",
       {nt + "esh4-glbx-mdp3-20231225.mbo.dbn.zst", nt + "definition-glbx-es-fut.dbn.zst"},
       "dbn-mbo",
       47023,
       2973,
       68792,
       891,
       0},
      {"es-mbo-20240508",
       {nt + "order_book_deltas_catalog/databento/"
             "orderbooks_mbo_2024-05-08T00-00-00_2024-05-08T00-00-02.dbn.zst",
        nt + "order_book_deltas_catalog/databento/orderbooks_definition.dbn.zst"},
       "dbn-mbo",
       185,
       5,
       13796,
       0,
       0},
      {"es-mbp1",
       {nt + "historical_bars_catalog/databento/"
             "futures_mbp-1_2024-07-01T23-58_2024-07-02T00-02.dbn.zst",
        nt + "historical_bars_catalog/databento/futures_definition.dbn.zst"},
       "dbn-mbp-1",
       2168,
       120,
       0,
       0,
       0},
      {"es-trades",
       {nt + "historical_bars_catalog/databento/"
             "futures_trades_2024-07-01T23-58_2024-07-02T00-02.dbn.zst"},
       "dbn-trades",
       0,
       120,
       0,
       0,
       0},
      {"binance-spot", {bn + "spot/btcusdt_20240808.gz"}, "binance-spot", 3449, 9757, 0, 0, 0},
      {"binance-usdm", {bn + "usdm/btcusdt_20240808.gz"}, "binance-usdm", 6547, 21313, 0, 0, 0},
      {"lobster-aapl",
       {lob + "message_10.csv", lob + "orderbook_10.csv"},
       "lobster",
       999,
       159,
       999,
       0,
       0},
      {"fixture-mbp10", {fx + "test_data.mbp-10.v3.dbn.zst"}, "dbn-mbp-10", 2, 0, 0, 0, 0},
      {"fixture-mbp1", {fx + "test_data.mbp-1.v2.dbn.zst"}, "dbn-mbp-1", 2, 0, 0, 0, 0},
      {"fixture-tbbo", {fx + "test_data.tbbo.v1.dbn.zst"}, "dbn-tbbo", 2, 2, 0, 0, 0},
      {"fixture-trades", {fx + "test_data.trades.dbn"}, "dbn-trades", 0, 2, 0, 0, 0},
      {"fixture-definition",
       {fx + "test_data.definition.v3.dbn.zst"},
       "dbn-definition",
       0,
       0,
       0,
       0,
       0},
  };
  for (const auto& c : cases) {
    std::string sources;
    for (const auto& f : c.files) sources += data(f) + " ";
    nlohmann::json j = ingest_and_inspect(sources, c.name);
    SCOPED_TRACE(c.name);
    EXPECT_EQ(j["source"]["format"], c.format);
    EXPECT_EQ(j["counts"]["snapshots"], c.snapshots);
    EXPECT_EQ(j["counts"]["trades"], c.trades);
    EXPECT_EQ(j["counts"]["order_events"], c.order_events);
    EXPECT_EQ(j["counts"]["crossed"], c.crossed);
    EXPECT_EQ(j["counts"]["locked"], c.locked);
  }
}

// Instrument metadata comes from a matching definition file; without one the tick is inferred.
TEST(IngestReal, DefinitionsSupplyTheTick) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  const std::string nt =
      "nautilus_trader/tests/test_data/databento/order_book_deltas_catalog/"
      "databento/";
  auto with = ingest_and_inspect(
      data(nt + "orderbooks_mbo_2024-05-08T00-00-00_2024-05-08T00-00-02.dbn.zst") + " " +
          data(nt + "orderbooks_definition.dbn.zst"),
      "with-definition");
  EXPECT_EQ(with["instrument"]["symbol"], "ESM4");
  EXPECT_EQ(with["instrument"]["instrument_id"], 5602);
  EXPECT_EQ(with["instrument"]["tick_px"], 250000000);
  EXPECT_EQ(with["instrument"]["tick_source"], "definition");
  EXPECT_EQ(with["instrument"]["currency"], "USD");
  auto without = ingest_and_inspect(
      data(nt + "orderbooks_mbo_2024-05-08T00-00-00_2024-05-08T00-00-02.dbn.zst"), "inferred");
  EXPECT_EQ(without["instrument"]["tick_px"], 250000000);
  EXPECT_EQ(without["instrument"]["tick_source"], "inferred");
}

// Several sources in one call: --out becomes a dataset folder with a store per source.
TEST(IngestReal, SeveralSourcesMakeADataset) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string out = test::scratch_dir() + "/dataset";
  const std::string fx = "dbn-fixtures/databento-cpp/tests/data/";
  auto r = run_fxt("-q ingest " + data(fx + "test_data.mbp-10.v1.dbn") + " " +
                   data(fx + "test_data.mbp-1.v1.dbn") + " --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::exists(out + "/test_data.mbp-10.v1/meta.json"));
  EXPECT_TRUE(std::filesystem::exists(out + "/test_data.mbp-1.v1/meta.json"));
}

}  // namespace
}  // namespace fxt
