#include "data/ingest.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

#include "core/file_util.h"
#include "core/log.h"
#include "core/progress.h"
#include "data/binance.h"
#include "data/dbn.h"
#include "data/lobster.h"
#include "data/mbo_book.h"
#include "data/store.h"
#include "data/tardis.h"

namespace fxt {
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The first bytes of a file, for content sniffing.
std::string head_bytes(const std::string& path, size_t n) {
  std::string out(n, '\0');
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  size_t got = std::fread(out.data(), 1, n, f);
  std::fclose(f);
  out.resize(got);
  return out;
}

bool is_lobster_name(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  return ends_with(name, ".csv") && (name.find("_message_") != std::string::npos ||
                                     name.find("_orderbook_") != std::string::npos);
}

Result<SourceFormat> detect_format(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound("{}: no such file", path);
  if (fs::is_directory(path, ec))
    return InvalidInput("{}: is a directory, expected a source file", path);
  if (is_tardis_book_name(path) || is_tardis_trades_name(path)) return SourceFormat::kTardis;
  std::string head = head_bytes(path, 4);
  if (head.size() >= 2 && static_cast<uint8_t>(head[0]) == 0x1f &&
      static_cast<uint8_t>(head[1]) == 0x8b) {
    return SourceFormat::kBinance;  // gzip text capture
  }
  if (is_lobster_name(path)) return SourceFormat::kLobster;
  if (head.size() >= 3 && head.compare(0, 3, "DBN") == 0) return SourceFormat::kDbn;
  if (head.size() == 4 && static_cast<uint8_t>(head[0]) == 0x28 &&
      static_cast<uint8_t>(head[1]) == 0xB5 && static_cast<uint8_t>(head[2]) == 0x2F &&
      static_cast<uint8_t>(head[3]) == 0xFD) {
    return SourceFormat::kDbn;  // zstd: DBN is the only compressed format we read
  }
  if (ends_with(path, ".dbn") || ends_with(path, ".frag") || ends_with(path, ".dbz")) {
    return SourceFormat::kDbn;  // the DBN reader gives the precise error
  }
  if (!head.empty() && head[0] == '{') return SourceFormat::kBinance;
  if (head.size() >= 2 && std::isdigit(static_cast<unsigned char>(head[0]))) {
    std::string line = head_bytes(path, 64);
    if (line.find(" {") != std::string::npos) return SourceFormat::kBinance;
  }
  return InvalidInput(
      "{}: offset 0: unrecognised format (expected DBN, zstd-compressed DBN, a "
      "gzip Binance capture, a LOBSTER *_message_*/*_orderbook_* CSV or a Tardis.dev "
      "*_incremental_book_L2_*/*_trades_* CSV); use "
      "--format to force one",
      path);
}

// Is this DBN file made only of instrument definitions? Its schema says so, or — for a
// mixed-schema stream, which names none — every record is a definition. A market-data file
// that carries its own definition records first (as `fxt synth` writes them) is data: it is
// ingested as a source, and describe_dbn reads those leading definitions for its store.
Result<bool> is_definition_file(const std::string& path, const IngestOptions& options) {
  dbn::ReaderOptions ro;
  ro.fragment_version = options.dbn_fragment_version;
  FXT_ASSIGN_OR_RETURN(auto reader, dbn::Reader::open(path, ro));
  const dbn::Schema schema = reader.metadata().schema;
  if (schema == dbn::Schema::kDefinition) return true;
  if (schema != dbn::Schema::kMixed) return false;
  bool any = false;
  dbn::RecordRef rec;
  while (reader.next(&rec)) {
    if (rec.rtype() != dbn::kRTypeDefinition) return false;
    any = true;
  }
  FXT_RETURN_IF_ERROR(reader.status());
  return any;
}

// ---- DBN market-by-price and trades -------------------------------------------------

template <int kLevels>
void fill_snapshot(const dbn::MbpMsg<kLevels>& m, Snapshot* s) {
  s->clear_levels();
  s->ts_ns = static_cast<int64_t>(m.ts_recv);
  s->ts_alt_ns = static_cast<int64_t>(m.hd.ts_event);
  for (int i = 0; i < kLevels; ++i) {
    const dbn::BidAskPair& l = m.levels[i];
    if (l.bid_px != kEmptyPx && l.bid_sz > 0) {
      s->bid_px[i] = l.bid_px;
      s->bid_sz[i] = l.bid_sz;
      s->bid_ct[i] = l.bid_ct;
    }
    if (l.ask_px != kEmptyPx && l.ask_sz > 0) {
      s->ask_px[i] = l.ask_px;
      s->ask_sz[i] = l.ask_sz;
      s->ask_ct[i] = l.ask_ct;
    }
  }
}

int8_t aggressor_side(char side) {
  return side == 'B' ? 1 : side == 'A' ? -1 : 0;
}

struct MbpCounts {
  uint64_t records = 0, book_records = 0, trade_records = 0, definitions = 0, other = 0;
  uint64_t other_instruments = 0;
};

// Market-by-price (mbp-10, mbp-1, tbbo) and trades records: each record carries the book
// after the event; a snapshot is emitted at every F_LAST and at the end of a F_SNAPSHOT
// run. Trade records ('T' actions, and every trades-schema record) become Trades.
Status ingest_dbn_mbp(dbn::Reader& reader, StoreWriter* sink, MbpCounts* counts) {
  Snapshot pending;
  bool have_pending = false, pending_in_run = false;
  uint8_t pending_flags = 0;
  uint32_t instrument = 0;
  Progress progress("ingest " + fs::path(reader.path()).filename().string(), 0, "rec");
  auto emit = [&] {
    pending.flags = pending_flags;
    pending.mark_crossed_or_locked();
    sink->on_snapshot(pending);
    have_pending = false;
    pending_flags = 0;
  };
  dbn::RecordRef rec;
  while (reader.next(&rec)) {
    ++counts->records;
    progress.advance();
    const uint8_t rtype = rec.rtype();
    if (rtype == dbn::kRTypeDefinition) {
      ++counts->definitions;
      continue;
    }
    if (rtype != dbn::kRTypeMbp0 && rtype != dbn::kRTypeMbp1 && rtype != dbn::kRTypeMbp10) {
      ++counts->other;
      continue;
    }
    const auto& t = rec.as<dbn::TradeMsg>();
    if (instrument == 0) instrument = t.hd.instrument_id;
    if (t.hd.instrument_id != instrument) {
      ++counts->other_instruments;
      continue;
    }
    const bool in_run = (t.flags & dbn::kFSnapshot) != 0;
    if (have_pending && pending_in_run && !in_run) emit();  // a snapshot run ended
    if (t.action == 'T' || rtype == dbn::kRTypeMbp0) {
      sink->on_trade({static_cast<int64_t>(t.ts_recv), t.price, static_cast<double>(t.size),
                      aggressor_side(t.side)});
      ++counts->trade_records;
    }
    if (rtype == dbn::kRTypeMbp0) continue;
    ++counts->book_records;
    if (rtype == dbn::kRTypeMbp10) {
      fill_snapshot(rec.as<dbn::Mbp10Msg>(), &pending);
    } else {
      fill_snapshot(rec.as<dbn::Mbp1Msg>(), &pending);
    }
    have_pending = true;
    pending_in_run = in_run;
    if (in_run) pending_flags |= kFlagSnapshotRun;
    if (t.flags & dbn::kFMaybeBadBook) pending_flags |= kFlagMaybeBadBook;
    if (t.flags & dbn::kFBadTsRecv) pending_flags |= kFlagBadTimestamp;
    if (t.flags & dbn::kFLast) emit();
  }
  FXT_RETURN_IF_ERROR(reader.status());
  if (have_pending) emit();
  progress.finish();
  return Status::Ok();
}

nlohmann::json mbo_stats_json(const MboStats& s) {
  return {{"events", s.events},
          {"snapshots", s.snapshots},
          {"snapshot_run_snapshots", s.snapshot_run_snapshots},
          {"adds", s.adds},
          {"cancels", s.cancels},
          {"modifies", s.modifies},
          {"clears", s.clears},
          {"trades", s.trades},
          {"fills", s.fills},
          {"unknown_order_ids", s.unknown_order_ids},
          {"cancel_unknown_ids", s.cancel_unknown_ids},
          {"modify_unknown_ids", s.modify_unknown_ids},
          {"oversize_cancels", s.oversize_cancels},
          {"duplicate_add_ids", s.duplicate_add_ids},
          {"crossed_snapshots", s.crossed_snapshots},
          {"locked_snapshots", s.locked_snapshots},
          {"ignored_adds", s.ignored_adds},
          {"removing_modifies", s.removing_modifies},
          {"unknown_actions", s.unknown_actions},
          {"unterminated_events", s.unterminated_events},
          {"maybe_bad_book_snapshots", s.maybe_bad_book_snapshots},
          {"bad_ts_snapshots", s.bad_ts_snapshots},
          {"orders_resting_at_end", s.orders_resting},
          {"max_orders_resting", s.max_orders_resting},
          {"max_bid_levels", s.max_bid_levels},
          {"max_ask_levels", s.max_ask_levels},
          {"other_records", s.other_records},
          {"other_instrument_records", s.other_instrument_records}};
}

// Instrument metadata from definition files (and definition records inside the data file).
struct Definitions {
  std::map<uint32_t, dbn::InstrumentDef> by_id;
};

Status load_definitions(const std::string& path, const IngestOptions& options, Definitions* defs) {
  dbn::ReaderOptions ro;
  ro.fragment_version = options.dbn_fragment_version;
  FXT_ASSIGN_OR_RETURN(auto reader, dbn::Reader::open(path, ro));
  dbn::RecordRef rec;
  while (reader.next(&rec)) {
    if (rec.rtype() != dbn::kRTypeDefinition) continue;
    FXT_ASSIGN_OR_RETURN(dbn::InstrumentDef def, reader.decode_definition(rec));
    defs->by_id[def.instrument_id] = def;
  }
  return reader.status();
}

void apply_definition(const dbn::InstrumentDef& def, StoreInfo* info) {
  if (!def.raw_symbol.empty()) info->symbol = def.raw_symbol;
  info->instrument_id = def.instrument_id;
  if (def.min_price_increment > 0 && def.min_price_increment != kEmptyPx) {
    info->tick_px = def.min_price_increment;
    info->tick_source = "definition";
  }
  if (!def.currency.empty()) info->currency = def.currency;
  if (def.contract_multiplier > 0 && def.contract_multiplier != INT32_MAX) {
    info->contract_multiplier = def.contract_multiplier;
  }
  info->extra["definition"] = {{"raw_symbol", def.raw_symbol},
                               {"exchange", def.exchange},
                               {"asset", def.asset},
                               {"unit_of_measure", def.unit_of_measure},
                               {"security_type", def.security_type}};
}

// The DBN file's single instrument id and symbol, from its first market record and metadata.
Status describe_dbn(const std::string& path, const IngestOptions& options, Definitions* defs,
                    StoreInfo* info, dbn::Schema* schema, uint8_t* first_rtype) {
  dbn::ReaderOptions ro;
  ro.fragment_version = options.dbn_fragment_version;
  FXT_ASSIGN_OR_RETURN(auto reader, dbn::Reader::open(path, ro));
  const dbn::Metadata& md = reader.metadata();
  *schema = md.schema;
  if (!md.symbols.empty()) info->symbol = md.symbols.front();
  info->extra["dbn"] = {
      {"version", md.version}, {"dataset", md.dataset}, {"schema", dbn::schema_name(md.schema)}};
  *first_rtype = 0xFF;
  dbn::RecordRef rec;
  while (reader.next(&rec)) {
    if (rec.rtype() == dbn::kRTypeDefinition) {
      FXT_ASSIGN_OR_RETURN(dbn::InstrumentDef def, reader.decode_definition(rec));
      defs->by_id.emplace(def.instrument_id, def);
      continue;
    }
    *first_rtype = rec.rtype();
    info->instrument_id = rec.header->instrument_id;
    break;
  }
  FXT_RETURN_IF_ERROR(reader.status());
  // A definition-only file describes its (first) instrument.
  if (*first_rtype == 0xFF && !defs->by_id.empty())
    info->instrument_id = defs->by_id.begin()->first;
  auto it = defs->by_id.find(info->instrument_id);
  if (it != defs->by_id.end()) {
    apply_definition(it->second, info);
  } else if (!defs->by_id.empty()) {
    log_warn(
        "{}: no definition for instrument {} among those given ({} instruments); the tick "
        "size will be inferred from the book",
        path, info->instrument_id, defs->by_id.size());
  }
  return Status::Ok();
}

// `fxt ingest --tick`: the user's tick replaces a definition's (with a warning when they
// differ) or the inferred one; StoreWriter::finish checks that it divides the book's levels.
void apply_tick_option(const IngestOptions& options, StoreInfo* info) {
  if (options.tick_px <= 0) return;
  if (info->tick_px > 0 && info->tick_px != options.tick_px) {
    log_warn("{}: --tick {} replaces the {}'s tick {}", info->source_path,
             static_cast<double>(options.tick_px) * kPxScale, info->tick_source,
             static_cast<double>(info->tick_px) * kPxScale);
  }
  info->tick_px = options.tick_px;
  info->tick_source = "flag";
}

Result<nlohmann::json> ingest_dbn(const IngestJob& job, const std::vector<std::string>& def_files,
                                  const IngestOptions& options, const std::string& store_dir) {
  const std::string& path = job.files.front();
  Definitions defs;
  for (const auto& f : def_files) FXT_RETURN_IF_ERROR(load_definitions(f, options, &defs));
  StoreInfo info;
  info.source_path = path;
  dbn::Schema schema = dbn::Schema::kMixed;
  uint8_t first_rtype = 0xFF;
  FXT_RETURN_IF_ERROR(describe_dbn(path, options, &defs, &info, &schema, &first_rtype));
  const bool is_mbo = schema == dbn::Schema::kMbo || first_rtype == dbn::kRTypeMbo;
  info.source_format = std::string("dbn-") + (is_mbo ? "mbo" : dbn::schema_name(schema));
  // Sources with trades: MBO ('T' records), trades and tbbo schemas, and MBP files carrying
  // 'T' actions (decided after the fact by the store: no trades seen → tick rule).
  info.has_trades = is_mbo || schema == dbn::Schema::kTrades || schema == dbn::Schema::kTbbo;

  apply_tick_option(options, &info);
  FXT_ASSIGN_OR_RETURN(StoreWriter writer, StoreWriter::create(store_dir, info));
  if (is_mbo) {
    MboStats stats;
    MboReplayOptions mo;
    mo.instrument_id = info.instrument_id;
    mo.dbn_fragment_version = options.dbn_fragment_version;
    FXT_RETURN_IF_ERROR(replay_mbo_file(path, &writer, &stats, mo));
    writer.source_stats() = mbo_stats_json(stats);
  } else {
    dbn::ReaderOptions ro;
    ro.fragment_version = options.dbn_fragment_version;
    FXT_ASSIGN_OR_RETURN(auto reader, dbn::Reader::open(path, ro));
    MbpCounts counts;
    FXT_RETURN_IF_ERROR(ingest_dbn_mbp(reader, &writer, &counts));
    writer.source_stats() = {{"records", counts.records},
                             {"book_records", counts.book_records},
                             {"trade_records", counts.trade_records},
                             {"definition_records", counts.definitions},
                             {"other_records", counts.other},
                             {"other_instrument_records", counts.other_instruments}};
  }
  FXT_RETURN_IF_ERROR(writer.finish());
  FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(store_dir, /*verify_checksums=*/false));
  return r.meta();
}

Result<nlohmann::json> ingest_binance(const IngestJob& job, const IngestOptions& options,
                                      const std::string& store_dir) {
  BinanceOptions bo;
  FXT_ASSIGN_OR_RETURN(bo.market, parse_binance_market(options.binance_market));
  StoreInfo info;
  info.source_path = job.files.front();
  info.source_format = "binance";
  info.has_trades = true;
  info.currency = "USDT";
  apply_tick_option(options, &info);
  FXT_ASSIGN_OR_RETURN(StoreWriter writer, StoreWriter::create(store_dir, info));
  BinanceStats stats;
  FXT_RETURN_IF_ERROR(replay_binance_capture(job.files.front(), bo, &writer, &stats));
  writer.info().symbol = stats.symbol;
  writer.info().source_format = std::string("binance-") + binance_market_name(stats.market);
  writer.source_stats() = stats.to_json();
  FXT_RETURN_IF_ERROR(writer.finish());
  FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(store_dir, false));
  return r.meta();
}

Result<nlohmann::json> ingest_lobster(const IngestJob& job, const IngestOptions& options,
                                      const std::string& store_dir) {
  LobsterOptions lo;
  lo.date = options.lobster_date;
  StoreInfo info;
  info.source_path = job.files[0] + "," + job.files[1];
  info.source_format = "lobster";
  info.has_trades = true;
  info.currency = "USD";
  std::string name = fs::path(job.files[0]).filename().string();
  info.symbol = name.substr(0, name.find('_'));
  apply_tick_option(options, &info);
  FXT_ASSIGN_OR_RETURN(StoreWriter writer, StoreWriter::create(store_dir, info));
  LobsterStats stats;
  FXT_RETURN_IF_ERROR(import_lobster(job.files[0], job.files[1], lo, &writer, &stats));
  writer.source_stats() = stats.to_json();
  FXT_RETURN_IF_ERROR(writer.finish());
  FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(store_dir, false));
  return r.meta();
}

Result<nlohmann::json> ingest_tardis(const IngestJob& job, const IngestOptions& options,
                                     const std::string& store_dir) {
  StoreInfo info;
  info.source_path = job.files.size() > 1 ? job.files[0] + "," + job.files[1] : job.files[0];
  info.source_format = "tardis";
  info.has_trades = job.files.size() > 1;
  apply_tick_option(options, &info);
  FXT_ASSIGN_OR_RETURN(StoreWriter writer, StoreWriter::create(store_dir, info));
  TardisStats stats;
  FXT_RETURN_IF_ERROR(import_tardis(job.files[0], job.files.size() > 1 ? job.files[1] : "",
                                    &writer, &stats));
  writer.info().symbol = stats.symbol;
  writer.source_stats() = stats.to_json();
  FXT_RETURN_IF_ERROR(writer.finish());
  FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(store_dir, false));
  return r.meta();
}

}  // namespace

Result<SourceFormat> parse_source_format(const std::string& name) {
  if (name == "auto") return SourceFormat::kAuto;
  if (name == "dbn") return SourceFormat::kDbn;
  if (name == "binance") return SourceFormat::kBinance;
  if (name == "lobster") return SourceFormat::kLobster;
  if (name == "tardis") return SourceFormat::kTardis;
  return UsageError("--format {}: expected auto, dbn, binance, lobster or tardis", name);
}

std::string source_stem(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  for (const char* suffix : {".zst", ".gz", ".frag", ".dbn", ".csv"}) {
    if (ends_with(name, suffix)) name.resize(name.size() - std::strlen(suffix));
  }
  return name;
}

Result<std::vector<IngestJob>> plan_ingest(const std::vector<std::string>& paths,
                                           const IngestOptions& options,
                                           std::vector<std::string>* definitions) {
  std::vector<IngestJob> jobs;
  std::vector<std::string> lobster_messages, lobster_books, tardis_books, tardis_trades;
  for (const auto& path : paths) {
    SourceFormat format = options.format;
    if (format == SourceFormat::kAuto) {
      FXT_ASSIGN_OR_RETURN(format, detect_format(path));
    }
    if (format == SourceFormat::kLobster) {
      std::string name = fs::path(path).filename().string();
      if (name.find("_orderbook_") != std::string::npos) {
        lobster_books.push_back(path);
      } else {
        lobster_messages.push_back(path);
      }
      continue;
    }
    if (format == SourceFormat::kTardis) {
      (is_tardis_trades_name(path) ? tardis_trades : tardis_books).push_back(path);
      continue;
    }
    if (format == SourceFormat::kDbn) {
      FXT_ASSIGN_OR_RETURN(bool defs_only, is_definition_file(path, options));
      if (defs_only) {
        definitions->push_back(path);
        continue;
      }
    }
    jobs.push_back({format, {path}, source_stem(path)});
  }
  // Pair LOBSTER files by the name they share: X_message_N.csv with X_orderbook_N.csv.
  for (const auto& msg : lobster_messages) {
    std::string want = fs::path(msg).filename().string();
    size_t at = want.find("_message_");
    if (at == std::string::npos) {
      return UsageError("{}: a LOBSTER message file name must contain _message_", msg);
    }
    want.replace(at, 9, "_orderbook_");
    auto it = std::find_if(lobster_books.begin(), lobster_books.end(), [&](const std::string& b) {
      return fs::path(b).filename().string() == want;
    });
    if (it == lobster_books.end()) {
      return UsageError(
          "{}: its orderbook file {} was not given (a LOBSTER pair is given as its "
          "two files)",
          msg, want);
    }
    std::string stem = source_stem(msg);
    stem.replace(stem.find("_message_"), 9, "_");
    jobs.push_back({SourceFormat::kLobster, {msg, *it}, stem});
    lobster_books.erase(it);
  }
  if (!lobster_books.empty()) {
    return UsageError(
        "{}: its message file was not given (a LOBSTER pair is given as its two "
        "files)",
        lobster_books.front());
  }
  // Tardis.dev: X_incremental_book_L2_Y with X_trades_Y when given (else the tick rule).
  for (const auto& book : tardis_books) {
    std::string want = fs::path(book).filename().string();
    const size_t at = want.find("_incremental_book_L2_");
    std::vector<std::string> files = {book};
    if (at != std::string::npos) {
      want.replace(at, 21, "_trades_");
      auto it = std::find_if(tardis_trades.begin(), tardis_trades.end(), [&](const std::string& t) {
        return fs::path(t).filename().string() == want;
      });
      if (it != tardis_trades.end()) {
        files.push_back(*it);
        tardis_trades.erase(it);
      }
    }
    jobs.push_back({SourceFormat::kTardis, files, source_stem(book)});
  }
  if (!tardis_trades.empty()) {
    return UsageError(
        "{}: a Tardis.dev trades file needs its incremental_book_L2 file (the same name with "
        "_incremental_book_L2_ for _trades_)",
        tardis_trades.front());
  }
  // Definition files alone make a (book-less) store each, so their metadata can be inspected.
  if (jobs.empty()) {
    for (const auto& d : *definitions) jobs.push_back({SourceFormat::kDbn, {d}, source_stem(d)});
  }
  return jobs;
}

Result<nlohmann::json> ingest_to_store(const IngestJob& job,
                                       const std::vector<std::string>& definitions,
                                       const IngestOptions& options, const std::string& store_dir) {
  switch (job.format) {
    case SourceFormat::kDbn:
      return ingest_dbn(job, definitions, options, store_dir);
    case SourceFormat::kBinance:
      return ingest_binance(job, options, store_dir);
    case SourceFormat::kLobster:
      return ingest_lobster(job, options, store_dir);
    case SourceFormat::kTardis:
      return ingest_tardis(job, options, store_dir);
    default:
      return InternalError("ingest: unresolved format for {}", job.files.front());
  }
}

Result<nlohmann::json> ingest_sources(const std::vector<std::string>& sources,
                                      const IngestOptions& options, const std::string& out) {
  std::vector<std::string> definitions;
  FXT_ASSIGN_OR_RETURN(auto jobs, plan_ingest(sources, options, &definitions));
  const bool single = jobs.size() == 1;
  nlohmann::json summary = nlohmann::json::array();
  for (const auto& job : jobs) {
    std::string dir = single ? out : (fs::path(out) / job.name).string();
    FXT_ASSIGN_OR_RETURN(nlohmann::json meta, ingest_to_store(job, definitions, options, dir));
    summary.push_back({{"store", dir}, {"meta", meta}});
  }
  return summary;
}

}  // namespace fxt
