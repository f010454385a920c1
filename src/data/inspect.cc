#include "data/inspect.h"

#include <algorithm>
#include <map>
#include <vector>

#include "data/book.h"
#include "data/dbn.h"
#include "data/mbo_book.h"
#include "data/store.h"

namespace fxt {
namespace {

const char* rtype_name(uint8_t rtype) {
  switch (rtype) {
    case dbn::kRTypeMbp0:
      return "trades";
    case dbn::kRTypeMbp1:
      return "mbp-1";
    case dbn::kRTypeMbp10:
      return "mbp-10";
    case dbn::kRTypeDefinition:
      return "definition";
    case dbn::kRTypeMbo:
      return "mbo";
    default:
      return "other";
  }
}

std::string chr(char c) {
  return c >= 32 && c < 127 ? std::string(1, c) : fmt::format("0x{:02x}", c);
}

nlohmann::json px_json(int64_t px) {
  if (px == kEmptyPx) return nullptr;
  return static_cast<double>(px) / 1e9;  // division keeps 3720.5 exact (x 1e-9 does not)
}

// DBN records are packed and may sit at unaligned addresses: fields are copied out by
// value (val) before anything binds a reference to them.
template <typename T>
T val(T x) {
  return x;
}

nlohmann::json record_json(const dbn::Reader& reader, const dbn::RecordRef& rec) {
  const auto& hd = *rec.header;
  nlohmann::json j = {{"offset", rec.offset},
                      {"rtype", rtype_name(hd.rtype)},
                      {"rtype_id", val(hd.rtype)},
                      {"publisher_id", val(hd.publisher_id)},
                      {"instrument_id", val(hd.instrument_id)},
                      {"ts_event", val(hd.ts_event)}};
  if (hd.rtype == dbn::kRTypeMbp0 || hd.rtype == dbn::kRTypeMbp1 || hd.rtype == dbn::kRTypeMbp10) {
    const auto& t = rec.as<dbn::TradeMsg>();
    j.update({{"price", px_json(t.price)},
              {"size", val(t.size)},
              {"action", chr(t.action)},
              {"side", chr(t.side)},
              {"flags", val(t.flags)},
              {"depth", val(t.depth)},
              {"ts_recv", val(t.ts_recv)},
              {"sequence", val(t.sequence)}});
    if (hd.rtype != dbn::kRTypeMbp0) {
      const auto& l = rec.as<dbn::Mbp1Msg>().levels[0];
      j["level0"] = {{"bid_px", px_json(l.bid_px)}, {"ask_px", px_json(l.ask_px)},
                     {"bid_sz", val(l.bid_sz)},     {"ask_sz", val(l.ask_sz)},
                     {"bid_ct", val(l.bid_ct)},     {"ask_ct", val(l.ask_ct)}};
    }
  } else if (hd.rtype == dbn::kRTypeMbo) {
    const auto& m = rec.as<dbn::MboMsg>();
    j.update({{"order_id", val(m.order_id)},
              {"price", px_json(m.price)},
              {"size", val(m.size)},
              {"action", chr(m.action)},
              {"side", chr(m.side)},
              {"flags", val(m.flags)},
              {"ts_recv", val(m.ts_recv)},
              {"sequence", val(m.sequence)}});
  } else if (hd.rtype == dbn::kRTypeDefinition) {
    auto def = reader.decode_definition(rec);
    if (def.ok()) {
      j.update({{"raw_symbol", def->raw_symbol},
                {"min_price_increment", px_json(def->min_price_increment)},
                {"currency", def->currency},
                {"exchange", def->exchange},
                {"unit_of_measure", def->unit_of_measure}});
    }
  }
  return j;
}

// Keeps the k largest time steps between consecutive timestamps.
class GapTracker {
 public:
  explicit GapTracker(int k) : k_(k) {}
  void add(uint64_t index, int64_t prev_ts, int64_t ts) {
    int64_t gap = ts - prev_ts;
    if (static_cast<int>(gaps_.size()) < k_ || gap > gaps_.back().gap_ns) {
      gaps_.push_back({index, prev_ts, ts, gap});
      std::sort(gaps_.begin(), gaps_.end(), [](auto& a, auto& b) { return a.gap_ns > b.gap_ns; });
      if (static_cast<int>(gaps_.size()) > k_) gaps_.pop_back();
    }
    if (gap < 0) ++backwards_;
  }
  nlohmann::json to_json(const char* unit) const {
    nlohmann::json arr = nlohmann::json::array();
    for (const auto& g : gaps_) {
      arr.push_back({{unit, g.index},
                     {"from_ts_ns", g.from},
                     {"to_ts_ns", g.to},
                     {"gap_s", static_cast<double>(g.gap_ns) * 1e-9}});
    }
    return {{"largest", arr}, {"backwards_steps", backwards_}};
  }

 private:
  struct Gap {
    uint64_t index;
    int64_t from, to, gap_ns;
  };
  int k_;
  std::vector<Gap> gaps_;
  uint64_t backwards_ = 0;
};

// A sink that only counts (for the crossed-book figures of an MBO file).
class CountingSink : public BookSink {
 public:
  void on_snapshot(const Snapshot&) override { ++snapshots; }
  void on_trade(const Trade&) override { ++trades; }
  uint64_t snapshots = 0, trades = 0;
};

}  // namespace

Result<nlohmann::json> inspect_dbn(const std::string& path, const InspectOptions& options) {
  dbn::ReaderOptions ro;
  ro.fragment_version = options.dbn_fragment_version;
  FXT_ASSIGN_OR_RETURN(auto reader, dbn::Reader::open(path, ro));
  const dbn::Metadata& md = reader.metadata();
  nlohmann::json mappings = nlohmann::json::array();
  for (const auto& m : md.mappings) {
    nlohmann::json iv = nlohmann::json::array();
    for (const auto& i : m.intervals) {
      iv.push_back({{"start_date", i.start_date}, {"end_date", i.end_date}, {"symbol", i.symbol}});
    }
    mappings.push_back({{"raw_symbol", m.raw_symbol}, {"intervals", iv}});
  }
  nlohmann::json out = {
      {"kind", "dbn"},
      {"path", path},
      {"metadata",
       {{"version", md.version},
        {"dataset", md.dataset},
        {"schema", dbn::schema_name(md.schema)},
        {"start", md.start},
        {"end", md.end},
        {"limit", md.limit},
        {"stype_in", dbn::stype_name(md.stype_in)},
        {"stype_out", dbn::stype_name(md.stype_out)},
        {"ts_out", md.ts_out},
        {"symbols", md.symbols},
        {"partial", md.partial},
        {"not_found", md.not_found},
        {"mappings", mappings}}},
  };
  std::map<std::string, uint64_t> counts;
  std::map<uint32_t, uint64_t> instruments;
  uint64_t records = 0, crossed = 0, locked = 0;
  int64_t first_ts = 0, last_ts = 0;
  GapTracker gaps(options.top_gaps);
  nlohmann::json first, last;
  std::vector<uint8_t> last_bytes;
  uint64_t last_offset = 0;
  bool has_mbo = false;
  dbn::RecordRef rec;
  while (reader.next(&rec)) {
    ++records;
    const auto& hd = *rec.header;
    ++counts[rtype_name(hd.rtype)];
    if (hd.rtype == dbn::kRTypeMbo) has_mbo = true;
    // Keep a copy of the latest record; only the last one is rendered.
    last_bytes.assign(reinterpret_cast<const uint8_t*>(rec.header),
                      reinterpret_cast<const uint8_t*>(rec.header) + rec.size());
    last_offset = rec.offset;
    if (hd.rtype == dbn::kRTypeDefinition) {
      if (first.is_null()) first = record_json(reader, rec);
      continue;
    }
    const uint32_t instrument_id = hd.instrument_id;  // a copy: records may be unaligned
    ++instruments[instrument_id];
    if (first.is_null()) first = record_json(reader, rec);
    auto ts = static_cast<int64_t>(hd.ts_event);
    if (hd.rtype == dbn::kRTypeMbp0 || hd.rtype == dbn::kRTypeMbp1 ||
        hd.rtype == dbn::kRTypeMbp10) {
      ts = static_cast<int64_t>(rec.as<dbn::TradeMsg>().ts_recv);
    } else if (hd.rtype == dbn::kRTypeMbo) {
      ts = static_cast<int64_t>(rec.as<dbn::MboMsg>().ts_recv);
    }
    if (first_ts == 0)
      first_ts = ts;
    else
      gaps.add(records - 1, last_ts, ts);
    last_ts = ts;
    if (hd.rtype == dbn::kRTypeMbp1 || hd.rtype == dbn::kRTypeMbp10) {
      const auto& l = rec.as<dbn::Mbp1Msg>().levels[0];
      if (l.bid_px != kEmptyPx && l.ask_px != kEmptyPx && l.bid_sz > 0 && l.ask_sz > 0) {
        if (l.bid_px > l.ask_px)
          ++crossed;
        else if (l.bid_px == l.ask_px)
          ++locked;
      }
    }
  }
  FXT_RETURN_IF_ERROR(reader.status());
  if (!last_bytes.empty()) {
    dbn::RecordRef last_rec{reinterpret_cast<const dbn::RecordHeader*>(last_bytes.data()),
                            last_offset};
    last = record_json(reader, last_rec);
  }
  nlohmann::json inst = nlohmann::json::object();
  for (auto [id, n] : instruments) inst[std::to_string(id)] = n;
  out["counts"] = counts;
  out["counts"]["records"] = records;
  out["instruments"] = inst;
  out["first_record"] = first;
  out["last_record"] = last;
  out["time"] = {{"first_ts_ns", first_ts},
                 {"last_ts_ns", last_ts},
                 {"span_s", static_cast<double>(last_ts - first_ts) * 1e-9}};
  out["gaps"] = gaps.to_json("record");
  if (has_mbo) {
    // Crossed books in an MBO file are a property of the rebuilt book: replay it.
    CountingSink sink;
    MboStats stats;
    MboReplayOptions mo;
    if (instruments.size() > 1) mo.instrument_id = instruments.begin()->first;
    mo.dbn_fragment_version = options.dbn_fragment_version;
    FXT_RETURN_IF_ERROR(replay_mbo_file(path, &sink, &stats, mo));
    out["book"] = {{"snapshots", stats.snapshots},
                   {"crossed", stats.crossed_snapshots},
                   {"locked", stats.locked_snapshots},
                   {"unknown_order_ids", stats.unknown_order_ids}};
  } else {
    out["book"] = {{"crossed", crossed}, {"locked", locked}};
  }
  return out;
}

Result<nlohmann::json> inspect_store(const std::string& dir, const InspectOptions& options) {
  FXT_ASSIGN_OR_RETURN(StoreReader r, StoreReader::open(dir, /*verify_checksums=*/true));
  nlohmann::json out = r.meta();
  out.erase("columns");
  out["kind"] = "store";
  out["path"] = dir;
  out["checksums_verified"] = true;
  auto top = [&](uint64_t i) {
    Snapshot s = r.snapshot(i);
    return nlohmann::json{{"index", i},
                          {"ts_ns", s.ts_ns},
                          {"bid_px", px_json(s.bid_px[0])},
                          {"bid_sz", s.bid_sz[0]},
                          {"ask_px", px_json(s.ask_px[0])},
                          {"ask_sz", s.ask_sz[0]},
                          {"flags", s.flags},
                          {"cum_trades", r.cum_trade_count[i]},
                          {"cum_signed_volume", r.signed_volume[i]}};
  };
  if (r.size() > 0) {
    out["first_snapshot"] = top(0);
    out["last_snapshot"] = top(r.size() - 1);
  }
  GapTracker gaps(options.top_gaps);
  for (uint64_t i = 1; i < r.size(); ++i) gaps.add(i, r.ts_ns[i - 1], r.ts_ns[i]);
  out["gaps"] = gaps.to_json("snapshot");
  if (r.size() > 1) {
    out["time"]["span_s"] = static_cast<double>(r.ts_ns[r.size() - 1] - r.ts_ns[0]) * 1e-9;
  }
  return out;
}

}  // namespace fxt
