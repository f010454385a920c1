// fxt dump SRC: a DBN file's records or a store's rows as CSV or JSON lines (data/dump.h).
#include <memory>
#include <tuple>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "core/log.h"
#include "data/dump.h"

namespace fxt::cli {
namespace {
struct DumpArgs {
  std::string src;
  std::string out = "-";
  bool csv = false, json = false;
  uint64_t limit = 0;
  std::string start, end;
  std::string table = "snapshots";
  int dbn_version = 0;
};

Status run_dump(const DumpArgs& a) {
  if (a.csv && a.json) return UsageError("give --csv or --json, not both");
  DumpOptions o;
  o.format = a.json ? DumpFormat::kJsonLines : DumpFormat::kCsv;
  o.limit = a.limit;
  o.table = a.table;
  o.dbn_fragment_version = static_cast<uint8_t>(a.dbn_version);
  for (auto [flag, text, ns] :
       {std::tuple{"--start", &a.start, &o.start_ns}, std::tuple{"--end", &a.end, &o.end_ns}}) {
    if (text->empty()) continue;
    Result<int64_t> t = parse_utc_ns(*text);
    if (!t.ok()) return UsageError("{} {}", flag, t.status().message());
    *ns = *t;
  }
  if (o.end_ns <= o.start_ns) return UsageError("--end must be after --start");
  FXT_ASSIGN_OR_RETURN(const DumpSummary sum, dump_source(a.src, o, a.out));
  if (sum.skipped_other_kinds > 0) {
    log_warn(
        "{}: {} records of other kinds left out (CSV holds one record layout; --json "
        "writes every record)",
        a.src, sum.skipped_other_kinds);
  }
  if (a.out != "-") log_info("{}: {} records", a.out, sum.written);
  return Status::Ok();
}
}  // namespace

void register_dump(CLI::App& app) {
  auto a = std::make_shared<DumpArgs>();
  CLI::App* cmd =
      add_command(app, "dump", "write every record of a DBN file or store as CSV or JSON lines",
                  [a] { return run_dump(*a); });
  cmd->add_option("src", a->src, "a .dbn/.dbn.zst file or a store directory")->required();
  cmd->add_option("-o,--out", a->out, "output file (default: stdout)")->capture_default_str();
  cmd->add_flag("--csv", a->csv, "CSV with a header row (the default)");
  cmd->add_flag("--json", a->json, "JSON lines, one object per record");
  cmd->add_option("--limit", a->limit, "at most this many records (0 = all)")
      ->capture_default_str();
  cmd->add_option("--start", a->start,
                  "first time, inclusive: 2024-01-02T14:30:00.5Z, a date, or ns since the epoch");
  cmd->add_option("--end", a->end, "end time, exclusive (same forms as --start)");
  cmd->add_option("--table", a->table, "stores: snapshots, trades or events")
      ->capture_default_str();
  cmd->add_option("--dbn-version", a->dbn_version,
                  "DBN version of .dbn.frag inputs (records without metadata): 1, 2 or 3")
      ->check(int_range(0, 3));
}

}  // namespace fxt::cli
