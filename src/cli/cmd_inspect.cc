// fxt inspect PATH [--json]: what a DBN file or a snapshot store holds.
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/flag_checks.h"
#include "data/inspect.h"

namespace fxt::cli {
namespace fs = std::filesystem;

namespace {
struct InspectArgs {
  std::vector<std::string> paths;
  bool json = false;
  int dbn_version = 0;
  int top_gaps = 5;
};

std::string str(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "-";
  return j.dump();
}

void print_text(const nlohmann::json& j) {
  fmt::print("{} ({})\n", j["path"].get<std::string>(), j["kind"].get<std::string>());
  if (j["kind"] == "dbn") {
    const auto& md = j["metadata"];
    fmt::print("  DBN v{} dataset {} schema {} symbols {} stype {} -> {}\n", str(md["version"]),
               str(md["dataset"]), str(md["schema"]), md["symbols"].dump(), str(md["stype_in"]),
               str(md["stype_out"]));
    fmt::print("  records: {}\n", j["counts"].dump());
    fmt::print("  time: {} .. {} ns ({} s)\n", str(j["time"]["first_ts_ns"]),
               str(j["time"]["last_ts_ns"]), str(j["time"]["span_s"]));
    fmt::print("  book: {}\n", j["book"].dump());
    fmt::print("  first: {}\n  last:  {}\n", j["first_record"].dump(), j["last_record"].dump());
  } else {
    const auto& in = j["instrument"];
    fmt::print("  source {} ({}) symbol {} tick {} ({})\n", str(j["source"]["format"]),
               str(j["source"]["path"]), str(in["symbol"]), str(in["tick_size"]),
               str(in["tick_source"]));
    fmt::print("  counts: {}\n", j["counts"].dump());
    fmt::print("  time: {} .. {} ({} s), trade flow from {}\n", str(j["time"]["first_utc"]),
               str(j["time"]["last_utc"]), str(j["time"].value("span_s", 0.0)),
               str(j["trade_flow"]));
    if (j.contains("first_snapshot")) {
      fmt::print("  first: {}\n  last:  {}\n", j["first_snapshot"].dump(),
                 j["last_snapshot"].dump());
    }
    fmt::print("  checksums verified\n");
  }
  fmt::print("  largest gaps: {}\n", j["gaps"]["largest"].dump());
}

Status run_inspect(const InspectArgs& a) {
  InspectOptions options;
  options.dbn_fragment_version = static_cast<uint8_t>(a.dbn_version);
  options.top_gaps = a.top_gaps;
  nlohmann::json all = nlohmann::json::array();
  for (const auto& path : a.paths) {
    std::error_code ec;
    auto summary =
        fs::is_directory(path, ec) ? inspect_store(path, options) : inspect_dbn(path, options);
    if (!summary.ok()) return summary.status();
    if (a.json) {
      all.push_back(*summary);
    } else {
      print_text(*summary);
    }
  }
  if (a.json) fmt::print("{}\n", (all.size() == 1 ? all[0] : all).dump(2));
  return Status::Ok();
}
}  // namespace

void register_inspect(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* cmd = add_command(app, "inspect",
                              "print a store's or a DBN file's metadata, counts, first/last "
                              "records, time span, gaps and crossed books",
                              [a] { return run_inspect(*a); });
  cmd->add_option("paths", a->paths, "store directories or DBN files")->required();
  cmd->add_flag("--json", a->json, "print JSON");
  cmd->add_option("--dbn-version", a->dbn_version, "DBN version of .dbn.frag inputs")
      ->check(CLI::Range(0, 3))
      ->check(int_range(0, 3));
  cmd->add_option("--top-gaps", a->top_gaps, "how many of the largest time gaps to list")
      ->capture_default_str()
      ->check(int_range(0, 1000000));
}

}  // namespace fxt::cli
