// Helpers shared by the test programs: where the real market data lives, scratch
// directories, and running the fxt binary as a user would.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/book.h"

namespace fxt::test {

// ../shared/data (or $FXT_DATA_DIR). Empty string when absent.
std::string shared_data_dir();

// Absolute path of a file under the shared data folder ("" when the folder is absent).
std::string shared_file(const std::string& relative);

// A fresh, empty directory under the build tree, unique per test.
std::string scratch_dir();

// A directory of inputs shared by every process of one test program: ctest runs each test
// of a program as its own process, so a SetUpTestSuite fixture is rebuilt per test. `build`
// fills DIR once (under an exclusive lock, so parallel ctest processes wait for the first);
// it is rebuilt when the fxt binary or `recipe` (the commands, as text) changes. DIR is
// fixed, so paths recorded inside it (a checkpoint's stores) stay valid. Tests read it
// only; outputs go to scratch_dir(). Returns "" (with a gtest failure) when `build` fails.
std::string shared_fixture(const std::string& name, const std::string& recipe,
                           const std::function<bool(const std::string& dir)>& build);

// shared_fixture built by running `fxt C` for each command C in order, with every "DIR" in C
// replaced by the fixture's directory; the commands are the recipe. A failing command fails
// the build (a gtest failure naming it, with its output).
std::string shared_fxt_fixture(const std::string& name, const std::vector<std::string>& commands);

// A file's bytes ("" when it cannot be read) and writing bytes to a file (truncating).
std::string file_bytes(const std::string& path);
void write_bytes(const std::string& path, const std::string& bytes);
// A JSON-lines file with `key` removed from every line (wall-clock "seconds" of metrics.jsonl),
// each line re-serialised: what must match between an interrupted and an uninterrupted run.
std::string jsonl_without(const std::string& path, const std::string& key);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs `fxt ARGS` (ARGS already shell-quoted) and captures its output.
CommandResult run_fxt(const std::string& args);

// A BookSink that keeps everything it receives, and the order the kinds arrived in:
// 'S' snapshot, 'T' trade, 'E' order event.
class RecordingSink : public BookSink {
 public:
  void on_snapshot(const Snapshot& s) override {
    snapshots.push_back(s);
    order += 'S';
  }
  void on_trade(const Trade& t) override {
    trades.push_back(t);
    order += 'T';
  }
  void on_order_event(const OrderEvent& e) override {
    events.push_back(e);
    order += 'E';
  }
  const Snapshot& last() const { return snapshots.back(); }

  std::vector<Snapshot> snapshots;
  std::vector<Trade> trades;
  std::vector<OrderEvent> events;
  std::string order;
};

}  // namespace fxt::test

// Skips the current test with a message when the shared data folder is absent.
#define FXT_SKIP_WITHOUT_SHARED_DATA()                                    \
  do {                                                                    \
    if (::fxt::test::shared_data_dir().empty())                           \
      GTEST_SKIP() << "../shared/data is absent: real-data test skipped"; \
  } while (0)
