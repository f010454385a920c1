// fxt ingest SRC... --out DIR: source files → snapshot stores.
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/log.h"
#include "data/book.h"
#include "data/ingest.h"

namespace fxt::cli {
namespace {
struct IngestArgs {
  std::vector<std::string> sources;
  std::string out;
  std::string format = "auto";
  int dbn_version = 0;
  std::string binance_market = "auto";
  std::string lobster_date;
  double tick = 0;
  bool json = false;
};

Status run_ingest(const IngestArgs& a) {
  IngestOptions options;
  FXT_ASSIGN_OR_RETURN(options.format, parse_source_format(a.format));
  if (a.dbn_version < 0 || a.dbn_version > 3) {
    return UsageError("--dbn-version {}: expected 1, 2 or 3", a.dbn_version);
  }
  options.dbn_fragment_version = static_cast<uint8_t>(a.dbn_version);
  options.binance_market = a.binance_market;
  options.lobster_date = a.lobster_date;
  options.tick_px = static_cast<int64_t>(std::llround(a.tick / kPxScale));
  if (a.tick > 0 && options.tick_px <= 0) return UsageError("--tick {}: below 1e-9", a.tick);

  FXT_ASSIGN_OR_RETURN(nlohmann::json summary, ingest_sources(a.sources, options, a.out));
  for (const auto& entry : summary) {
    const auto& meta = entry["meta"];
    const auto& c = meta["counts"];
    constexpr uint64_t kFewSnapshots = 100;  // less than one training window's worth
    if (c["snapshots"].get<uint64_t>() < kFewSnapshots) {
      log_warn("{}: only {} snapshots (fewer than {}): too few to train or backtest on",
               entry["store"].get<std::string>(), c["snapshots"].get<uint64_t>(), kFewSnapshots);
    }
    if (a.json) continue;  // printed below as one JSON document
    fmt::print(
        "{}: {} snapshots, {} trades, {} order events, {} crossed, {} locked, {} .. {} "
        "({}, tick {})\n",
        entry["store"].get<std::string>(), c["snapshots"].get<uint64_t>(),
        c["trades"].get<uint64_t>(), c["order_events"].get<uint64_t>(),
        c["crossed"].get<uint64_t>(), c["locked"].get<uint64_t>(),
        meta["time"]["first_utc"].get<std::string>(), meta["time"]["last_utc"].get<std::string>(),
        meta["source"]["format"].get<std::string>(), meta["instrument"]["tick_size"].get<double>());
  }
  if (a.json) fmt::print("{}\n", summary.dump(2));
  return Status::Ok();
}
}  // namespace

void register_ingest(CLI::App& app) {
  auto a = std::make_shared<IngestArgs>();
  CLI::App* cmd =
      add_command(app, "ingest", "turn DBN, Binance or LOBSTER files into snapshot stores",
                  [a] { return run_ingest(*a); });
  cmd->add_option("sources", a->sources,
                  "source files: .dbn/.dbn.zst (+ definition files), Binance .gz captures, "
                  "LOBSTER message+orderbook CSV pairs, Tardis.dev incremental_book_L2 (+ trades) CSV")
      ->required();
  cmd->add_option("-o,--out", a->out,
                  "the store directory (one source) or dataset folder (several sources)")
      ->required();
  cmd->add_option("--format", a->format, "force the format: auto, dbn, binance, lobster, tardis")
      ->capture_default_str();
  cmd->add_option("--dbn-version", a->dbn_version,
                  "DBN version of .dbn.frag inputs (records without metadata): 1, 2 or 3")
      ->check(int_range(0, 3));
  cmd->add_option("--binance-market", a->binance_market, "auto, spot or usdm")
      ->capture_default_str();
  cmd->add_option("--lobster-date", a->lobster_date,
                  "trading day of LOBSTER files (YYYY-MM-DD; default: from the file name)");
  cmd->add_option("--tick", a->tick,
                  "the instrument's tick size in price units (e.g. 0.25); default: the DBN "
                  "definition's, else the smallest gap between price levels")
      ->check(finite_number(0, 1e9));
  cmd->add_flag("--json", a->json, "print the stores' metadata as JSON");
}

}  // namespace fxt::cli
