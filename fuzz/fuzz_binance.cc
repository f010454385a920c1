// libFuzzer entry for the Binance capture replayer: the input is split into lines
// and fed as a capture. Any input must end in statuses and counters, never a crash,
// a sanitizer report or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/log.h"
#include "data/binance.h"

namespace {

class NullSink : public fxt::BookSink {
 public:
  void on_snapshot(const fxt::Snapshot& s) override { sum_ += s.bid_px[0] ^ s.ask_px[0]; }
  void on_trade(const fxt::Trade& t) override { sum_ += t.px; }
  int64_t sum_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fxt::set_log_level(fxt::LogLevel::kQuiet);
  std::string_view in(reinterpret_cast<const char*>(data), size);
  // The first byte picks the market so overrides and detection are both exercised.
  fxt::BinanceOptions options;
  if (!in.empty()) {
    options.market = static_cast<fxt::BinanceMarket>(static_cast<uint8_t>(in[0]) % 3);
    in.remove_prefix(1);
  }
  NullSink sink;
  fxt::BinanceReplayer replayer("fuzz", options, &sink);
  uint64_t line_no = 0;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    const std::string_view line = in.substr(0, nl);
    (void)replayer.feed_line(line, ++line_no);  // errors are expected; the state must survive
    if (nl == std::string_view::npos) break;
    in.remove_prefix(nl + 1);
  }
  (void)replayer.finish();
  return 0;
}
