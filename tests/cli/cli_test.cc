// The fxt binary as a user runs it: exit codes, one-line errors on bad input, and
// synth → ingest → inspect end to end.
#include <filesystem>
#include <fstream>

#include <zlib.h>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_util.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;
using test::run_fxt;

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}
int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

TEST(Cli, HelpAndUsageErrors) {
  auto help = run_fxt("--help");
  EXPECT_EQ(help.exit_code, 0);
  for (const char* cmd : {"ingest", "inspect", "synth", "version"}) {
    EXPECT_NE(help.output.find(cmd), std::string::npos) << cmd;
    EXPECT_EQ(run_fxt(std::string(cmd) + " --help").exit_code, 0) << cmd;
  }
  EXPECT_EQ(run_fxt("").exit_code, 2);
  EXPECT_EQ(run_fxt("no-such-command").exit_code, 2);
  EXPECT_EQ(run_fxt("ingest").exit_code, 2);  // missing sources and --out
  auto fmt_err = run_fxt("ingest x.dbn --out y --format parquet");
  EXPECT_EQ(fmt_err.exit_code, 2);
  EXPECT_NE(fmt_err.output.find("--format parquet"), std::string::npos);
}

TEST(Cli, ConfigFileAndOverride) {
  std::string dir = test::scratch_dir();
  write_all(dir + "/run.toml", "[synth]\nevents = 2000\nseed = 7\n");
  auto a = run_fxt("synth --config " + dir + "/run.toml --out " + dir + "/a.dbn.zst --json");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  auto ja = nlohmann::json::parse(a.output.substr(a.output.find('{')));
  EXPECT_EQ(ja["events"], 2000);
  auto b = run_fxt("synth --config " + dir + "/run.toml --events 3000 --out " + dir +
                   "/b.dbn.zst --json");
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto jb = nlohmann::json::parse(b.output.substr(b.output.find('{')));
  EXPECT_EQ(jb["events"], 3000);  // the command line wins over the file
}

TEST(Cli, SynthIngestInspectEndToEnd) {
  std::string dir = test::scratch_dir();
  auto s = run_fxt("synth --out " + dir + "/m.dbn.zst --events 50000 --seed 3");
  ASSERT_EQ(s.exit_code, 0) << s.output;
  auto in = run_fxt("ingest " + dir + "/m.dbn.zst --out " + dir + "/store");
  ASSERT_EQ(in.exit_code, 0) << in.output;
  auto j = run_fxt("inspect --json " + dir + "/store");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  auto meta = nlohmann::json::parse(j.output);
  EXPECT_EQ(meta["kind"], "store");
  EXPECT_EQ(meta["counts"]["snapshots"], 50000);  // one F_LAST record per event
  EXPECT_EQ(meta["counts"]["crossed"], 0);
  EXPECT_EQ(meta["counts"]["locked"], 0);
  EXPECT_GT(meta["counts"]["trades"].get<int>(), 0);
  EXPECT_EQ(meta["trade_flow"], "trades");
  EXPECT_EQ(meta["instrument"]["tick_px"], 250000000);
  EXPECT_EQ(meta["instrument"]["tick_source"], "definition");
  EXPECT_EQ(meta["instrument"]["symbol"], "SYN");
  EXPECT_TRUE(meta["checksums_verified"].get<bool>());
  // The store is immutable: a second ingest into the same place is refused.
  auto again = run_fxt("ingest " + dir + "/m.dbn.zst --out " + dir + "/store");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.output.find("already exists"), std::string::npos);
  // Same seed, same bytes.
  ASSERT_EQ(run_fxt("synth --out " + dir + "/m2.dbn.zst --events 50000 --seed 3").exit_code, 0);
  EXPECT_EQ(read_all(dir + "/m.dbn.zst"), read_all(dir + "/m2.dbn.zst"));
}

// Each kind of bad file gives exit code 2 and one line naming the file and the offset,
// from both inspect and ingest, and ingest leaves no store behind.
TEST(Cli, BadInputFilesGiveOneLineErrors) {
  FXT_SKIP_WITHOUT_SHARED_DATA();
  std::string good = read_all(
      test::shared_file("dbn-fixtures/databento-dbn/tests/data/test_data.mbp-10.v2.dbn.zst"));
  std::string plain =
      read_all(test::shared_file("dbn-fixtures/databento-dbn/tests/data/test_data.mbp-10.dbn"));
  ASSERT_FALSE(good.empty());
  ASSERT_GT(plain.size(), 200u);
  std::string dir = test::scratch_dir();
  std::map<std::string, std::string> cases;
  cases["truncated.dbn"] = plain.substr(0, plain.size() - 100);
  cases["truncated.dbn.zst"] = good.substr(0, good.size() / 2);
  std::string flipped = plain;
  flipped[plain.size() - 368] = static_cast<char>(0);  // a record length of zero
  cases["bitflip.dbn"] = flipped;
  std::string magic = plain;
  magic[0] = 'X';
  cases["wrongmagic.dbn"] = magic;
  cases["empty.dbn"] = "";
  std::string version = plain;
  version[3] = 9;
  cases["wrongversion.dbn"] = version;
  std::string huge = plain;
  huge[4] = huge[5] = huge[6] = static_cast<char>(0xff);  // metadata length ~16 MB
  cases["hugelength.dbn"] = huge;
  for (const auto& [name, bytes] : cases) {
    std::string path = dir + "/" + name;
    write_all(path, bytes);
    for (const std::string& cmd :
         {"inspect " + path, "ingest " + path + " --out " + dir + "/s-" + name}) {
      auto r = run_fxt(cmd);
      EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.output;
      EXPECT_EQ(count_lines(r.output), 1) << cmd << "\n" << r.output;
      EXPECT_NE(r.output.find(path), std::string::npos) << r.output;
      if (name != "wrongmagic.dbn") {
        EXPECT_NE(r.output.find("offset"), std::string::npos) << r.output;
      }
    }
    EXPECT_FALSE(fs::exists(dir + "/s-" + name)) << name;
  }
  auto dbz = run_fxt(
      "inspect " + test::shared_file("dbn-fixtures/databento-dbn/tests/data/test_data.mbp-10.dbz"));
  EXPECT_EQ(dbz.exit_code, 2);
  EXPECT_NE(dbz.output.find(".dbz"), std::string::npos) << dbz.output;
  auto missing = run_fxt("inspect " + dir + "/does-not-exist.dbn");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.output.find("does-not-exist.dbn"), std::string::npos);
}

void write_gzip(const std::string& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  gzclose(f);
}

// Text sources: the error names the file and the line.
TEST(Cli, BadTextSourcesGiveOneLineErrors) {
  std::string dir = test::scratch_dir();
  const std::string good =
      "1 {\"lastUpdateId\":100,\"bids\":[[\"1.00\",\"1.0\"]],\"asks\":[[\"1.01\",\"1.0\"]]}\n"
      "2 {\"stream\":\"btcusdt@depth@100ms\",\"data\":{\"e\":\"depthUpdate\",\"E\":1,"
      "\"s\":\"BTCUSDT\",\"U\":101,\"u\":102,\"b\":[[\"1.00\",\"2.0\"]],\"a\":[]}}\n";
  write_gzip(dir + "/ok.gz", good);
  auto ok = run_fxt("-q ingest " + dir + "/ok.gz --out " + dir + "/ok");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;

  write_gzip(dir + "/badline.gz", good + "3 {\"stream\":\"btcusdt@dep\n");
  auto bad = run_fxt("ingest " + dir + "/badline.gz --out " + dir + "/s1");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_EQ(count_lines(bad.output), 1) << bad.output;
  EXPECT_NE(bad.output.find(dir + "/badline.gz: line 3:"), std::string::npos) << bad.output;
  EXPECT_FALSE(fs::exists(dir + "/s1"));

  std::string big;
  for (int i = 0; i < 2000; ++i) {
    big += fmt::format(
        "{} {{\"stream\":\"btcusdt@depth@100ms\",\"data\":{{\"e\":\"depthUpdate\",\"E\":{},"
        "\"s\":\"BTCUSDT\",\"U\":{},\"u\":{},\"b\":[[\"1.00\",\"{}.0\"]],\"a\":[]}}}}\n",
        3 + i, 2 + i, 103 + i, 103 + i, 1 + i % 7);
  }
  write_gzip(dir + "/full.gz", good + big);
  std::string gz = read_all(dir + "/full.gz");
  write_all(dir + "/truncated.gz", gz.substr(0, gz.size() / 2));
  auto cut = run_fxt("ingest " + dir + "/truncated.gz --out " + dir + "/s2");
  EXPECT_EQ(cut.exit_code, 2) << cut.output;
  EXPECT_EQ(count_lines(cut.output), 1) << cut.output;
  EXPECT_NE(cut.output.find("truncated gzip"), std::string::npos) << cut.output;
  EXPECT_FALSE(fs::exists(dir + "/s2"));

  // A LOBSTER pair whose files disagree in length, and a malformed message row.
  write_all(dir + "/X_2012-06-21_message_1.csv",
            "34200.1,1,7,10,1000000,1\n34200.2,3,7,10,1000000,1\n");
  write_all(dir + "/X_2012-06-21_orderbook_1.csv", "1010000,5,1000000,10\n");
  auto rows = run_fxt("ingest " + dir + "/X_2012-06-21_message_1.csv " + dir +
                      "/X_2012-06-21_orderbook_1.csv --out " + dir + "/s3");
  EXPECT_EQ(rows.exit_code, 2) << rows.output;
  EXPECT_EQ(count_lines(rows.output), 1) << rows.output;
  EXPECT_NE(rows.output.find("X_2012-06-21_orderbook_1.csv"), std::string::npos) << rows.output;
  write_all(dir + "/Y_2012-06-21_message_1.csv", "34200.1,1,7,ten,1000000,1\n");
  write_all(dir + "/Y_2012-06-21_orderbook_1.csv", "1010000,5,1000000,10\n");
  auto field = run_fxt("ingest " + dir + "/Y_2012-06-21_message_1.csv " + dir +
                       "/Y_2012-06-21_orderbook_1.csv --out " + dir + "/s4");
  EXPECT_EQ(field.exit_code, 2) << field.output;
  EXPECT_NE(field.output.find("Y_2012-06-21_message_1.csv: line 1"), std::string::npos)
      << field.output;
  auto unpaired = run_fxt("ingest " + dir + "/Y_2012-06-21_message_1.csv --out " + dir + "/s5");
  EXPECT_EQ(unpaired.exit_code, 2);
  EXPECT_NE(unpaired.output.find("orderbook"), std::string::npos) << unpaired.output;
}

}  // namespace
}  // namespace fxt
