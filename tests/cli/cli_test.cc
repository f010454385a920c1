// The fxt binary as a user runs it: exit codes, one-line errors on bad input, and
// synth → ingest → inspect end to end.
#include <filesystem>
#include <fstream>

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

}  // namespace
}  // namespace fxt
