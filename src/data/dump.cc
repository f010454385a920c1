#include "data/dump.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/civil_date.h"
#include "core/file_util.h"
#include "data/book.h"
#include "data/dbn.h"
#include "data/decimal.h"
#include "data/store.h"

namespace fxt {
namespace {
namespace fs = std::filesystem;
using Row = nlohmann::ordered_json;  // keys in column order

// A price as an exact decimal string; an empty level is null.
Row px(int64_t value) {
  if (value == kEmptyPx) return nullptr;
  return format_decimal(value, 9);
}

std::string chr(char c) {
  return c >= 32 && c < 127 ? std::string(1, c) : fmt::format("0x{:02x}", c);
}

// DBN records are packed and may be unaligned: fields are copied out by value.
template <typename T>
T val(T x) {
  return x;
}

// One CSV field: null is empty; strings holding a comma, quote or newline are quoted.
std::string csv_field(const Row& v) {
  if (v.is_null()) return "";
  if (!v.is_string()) return v.dump();
  const std::string& s = v.get_ref<const std::string&>();
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Writes rows as CSV (header from the first row) or JSON lines, to a file or stdout.
class RowWriter {
 public:
  static Result<RowWriter> open(const std::string& out, DumpFormat format) {
    RowWriter w;
    w.format_ = format;
    if (out != "-") {
      FXT_ASSIGN_OR_RETURN(BufferedFileWriter f, BufferedFileWriter::create(out));
      w.file_.emplace(std::move(f));
    }
    return w;
  }
  Status add(const Row& row) {
    line_.clear();
    if (format_ == DumpFormat::kJsonLines) {
      line_ = row.dump();
    } else {
      if (!header_written_) {
        for (const auto& [key, value] : row.items()) (line_.empty() ? line_ : line_ += ',') += key;
        line_ += '\n';
        header_written_ = true;
      }
      bool first = true;
      for (const auto& [key, value] : row.items()) {
        if (!first) line_ += ',';
        line_ += csv_field(value);
        first = false;
      }
    }
    line_ += '\n';
    return put(line_);
  }
  Status finish() {
    if (file_) return file_->commit();
    return std::fflush(stdout) == 0 ? Status::Ok() : IoError("stdout: write failed");
  }

 private:
  Status put(const std::string& s) {
    if (file_) return file_->write(s);
    if (std::fwrite(s.data(), 1, s.size(), stdout) != s.size()) {
      return IoError("stdout: write failed");
    }
    return Status::Ok();
  }
  DumpFormat format_ = DumpFormat::kCsv;
  std::optional<BufferedFileWriter> file_;
  std::string line_;
  bool header_written_ = false;
};

// ---- DBN -----------------------------------------------------------------------------------

// The record as a row, and its index time (ts_recv where the record has one).
Row dbn_row(const dbn::Reader& reader, const dbn::RecordRef& rec, int64_t* index_ts) {
  const dbn::RecordHeader& hd = *rec.header;
  const uint8_t rtype = hd.rtype;
  *index_ts = static_cast<int64_t>(val(hd.ts_event));
  Row r;
  auto head = [&](uint64_t ts_recv) {
    *index_ts = static_cast<int64_t>(ts_recv);
    r["ts_recv"] = ts_recv;
    r["ts_event"] = val(hd.ts_event);
    r["rtype"] = rtype;
    r["publisher_id"] = val(hd.publisher_id);
    r["instrument_id"] = val(hd.instrument_id);
  };
  if (rtype == dbn::kRTypeMbp0 || rtype == dbn::kRTypeMbp1 || rtype == dbn::kRTypeMbp10) {
    const auto& t = rec.as<dbn::TradeMsg>();
    head(val(t.ts_recv));
    r["action"] = chr(t.action);
    r["side"] = chr(t.side);
    r["depth"] = val(t.depth);
    r["price"] = px(val(t.price));
    r["size"] = val(t.size);
    r["flags"] = val(t.flags);
    r["ts_in_delta"] = val(t.ts_in_delta);
    r["sequence"] = val(t.sequence);
    const int levels = rtype == dbn::kRTypeMbp10 ? 10 : rtype == dbn::kRTypeMbp1 ? 1 : 0;
    const auto* pairs = levels == 10  ? rec.as<dbn::Mbp10Msg>().levels
                        : levels == 1 ? rec.as<dbn::Mbp1Msg>().levels
                                      : nullptr;
    for (int i = 0; i < levels; ++i) {
      const dbn::BidAskPair& l = pairs[i];
      const std::string n = fmt::format("{:02d}", i);
      r["bid_px_" + n] = px(val(l.bid_px));
      r["ask_px_" + n] = px(val(l.ask_px));
      r["bid_sz_" + n] = val(l.bid_sz);
      r["ask_sz_" + n] = val(l.ask_sz);
      r["bid_ct_" + n] = val(l.bid_ct);
      r["ask_ct_" + n] = val(l.ask_ct);
    }
  } else if (rtype == dbn::kRTypeMbo) {
    const auto& m = rec.as<dbn::MboMsg>();
    head(val(m.ts_recv));
    r["action"] = chr(m.action);
    r["side"] = chr(m.side);
    r["price"] = px(val(m.price));
    r["size"] = val(m.size);
    r["channel_id"] = val(m.channel_id);
    r["order_id"] = val(m.order_id);
    r["flags"] = val(m.flags);
    r["ts_in_delta"] = val(m.ts_in_delta);
    r["sequence"] = val(m.sequence);
  } else if (rtype == dbn::kRTypeDefinition) {
    auto def = reader.decode_definition(rec);
    head(def.ok() ? def->ts_recv : val(hd.ts_event));
    if (def.ok()) {
      r["raw_symbol"] = def->raw_symbol;
      r["instrument_class"] = chr(def->instrument_class);
      r["min_price_increment"] = px(def->min_price_increment);
      r["contract_multiplier"] = def->contract_multiplier;
      r["currency"] = def->currency;
      r["exchange"] = def->exchange;
      r["asset"] = def->asset;
      r["expiration"] = def->expiration;
    }
  } else {
    head(val(hd.ts_event));
    r["length"] = rec.size();  // a record type fxt does not decode
  }
  return r;
}

Result<DumpSummary> dump_dbn(const std::string& path, const DumpOptions& o, RowWriter& w) {
  dbn::ReaderOptions ro;
  ro.fragment_version = o.dbn_fragment_version;
  FXT_ASSIGN_OR_RETURN(auto reader, dbn::Reader::open(path, ro));
  // CSV holds one layout: the file's schema, or the first record kind other than definitions.
  std::optional<uint8_t> csv_rtype;
  if (reader.metadata().schema == dbn::Schema::kDefinition) csv_rtype = dbn::kRTypeDefinition;
  DumpSummary sum;
  dbn::RecordRef rec;
  while ((o.limit == 0 || sum.written < o.limit) && reader.next(&rec)) {
    const uint8_t rtype = rec.header->rtype;
    if (o.format == DumpFormat::kCsv) {
      if (!csv_rtype && rtype != dbn::kRTypeDefinition) csv_rtype = rtype;
      if (!csv_rtype || *csv_rtype != rtype) {
        ++sum.skipped_other_kinds;
        continue;
      }
    }
    int64_t ts = 0;
    const Row row = dbn_row(reader, rec, &ts);
    if (ts < o.start_ns || ts >= o.end_ns) continue;
    FXT_RETURN_IF_ERROR(w.add(row));
    ++sum.written;
  }
  FXT_RETURN_IF_ERROR(reader.status());
  return sum;
}

// ---- stores --------------------------------------------------------------------------------

Row snapshot_row(const StoreReader& s, uint64_t i) {
  Row r;
  r["ts_ns"] = s.ts_ns[i];
  r["ts_alt_ns"] = s.ts_alt_ns[i];
  r["flags"] = s.flags[i];
  for (int k = 0; k < kBookLevels; ++k) {
    const std::string n = fmt::format("{:02d}", k);
    const double bsz = s.bid_sz.row(i)[k], asz = s.ask_sz.row(i)[k];
    r["bid_px_" + n] = bsz > 0 ? px(s.bid_px.row(i)[k]) : Row();
    r["ask_px_" + n] = asz > 0 ? px(s.ask_px.row(i)[k]) : Row();
    r["bid_sz_" + n] = bsz;
    r["ask_sz_" + n] = asz;
    r["bid_ct_" + n] = s.bid_ct.row(i)[k];
    r["ask_ct_" + n] = s.ask_ct.row(i)[k];
  }
  r["cum_trades"] = s.cum_trade_count[i];
  r["cum_signed_volume"] = s.signed_volume[i];
  return r;
}

Row trade_row(const StoreReader& s, uint64_t i) {
  return Row{{"ts_ns", s.trade_ts_ns[i]},
             {"px", px(s.trade_px[i])},
             {"sz", s.trade_sz[i]},
             {"side", static_cast<int>(s.trade_side[i])},
             {"snapshot", s.trade_snapshot[i]}};
}

Row event_row(const StoreReader& s, uint64_t i) {
  return Row{{"ts_ns", s.event_ts_ns[i]},
             {"order_id", s.event_order_id[i]},
             {"action", chr(static_cast<char>(s.event_action[i]))},
             {"side", static_cast<int>(s.event_side[i])},
             {"px", px(s.event_px[i])},
             {"sz", s.event_sz[i]},
             {"flags", s.event_flags[i]},
             {"snapshot", s.event_snapshot[i]}};
}

Result<DumpSummary> dump_store(const std::string& dir, const DumpOptions& o, RowWriter& w) {
  FXT_ASSIGN_OR_RETURN(StoreReader s, StoreReader::open(dir));
  uint64_t n = 0;
  const Column<int64_t>* ts = nullptr;
  Row (*row)(const StoreReader&, uint64_t) = nullptr;
  if (o.table == "snapshots") {
    n = s.size(), ts = &s.ts_ns, row = &snapshot_row;
  } else if (o.table == "trades") {
    n = s.trade_count(), ts = &s.trade_ts_ns, row = &trade_row;
  } else if (o.table == "events") {
    n = s.event_count(), ts = &s.event_ts_ns, row = &event_row;
  } else {
    return UsageError("--table {}: expected snapshots, trades or events", o.table);
  }
  DumpSummary sum;
  for (uint64_t i = 0; i < n && (o.limit == 0 || sum.written < o.limit); ++i) {
    if ((*ts)[i] < o.start_ns || (*ts)[i] >= o.end_ns) continue;
    FXT_RETURN_IF_ERROR(w.add(row(s, i)));
    ++sum.written;
  }
  return sum;
}

}  // namespace

Result<DumpSummary> dump_source(const std::string& src, const DumpOptions& options,
                                const std::string& out) {
  std::error_code ec;
  const bool is_store = fs::is_directory(src, ec);
  if (!is_store && !fs::exists(src, ec)) return NotFound("{}: no such file or store", src);
  if (!is_store && options.table != "snapshots") {
    return UsageError("--table {}: only for stores (a DBN file is dumped record by record)",
                      options.table);
  }
  FXT_ASSIGN_OR_RETURN(RowWriter w, RowWriter::open(out, options.format));
  FXT_ASSIGN_OR_RETURN(DumpSummary sum,
                       is_store ? dump_store(src, options, w) : dump_dbn(src, options, w));
  FXT_RETURN_IF_ERROR(w.finish());
  return sum;
}

Result<int64_t> parse_utc_ns(const std::string& text) {
  if (!text.empty() &&
      text.find_first_not_of("0123456789", text[0] == '-' ? 1 : 0) == std::string::npos) {
    return parse_int64(text);
  }
  unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
  int used = 0;
  const auto bad = [&] {
    return UsageError(
        "'{}': expected a UTC time like 2024-01-02T14:30:00.5Z, a date, or ns "
        "since the epoch",
        text);
  };
  if (std::sscanf(text.c_str(), "%4u-%2u-%2u%n", &y, &mo, &d, &used) != 3 || used != 10 || mo < 1 ||
      mo > 12 || d < 1 || d > 31) {
    return bad();
  }
  size_t at = 10;
  int64_t frac_ns = 0;
  if (at < text.size() && (text[at] == 'T' || text[at] == ' ')) {
    if (std::sscanf(text.c_str() + at + 1, "%2u:%2u:%2u%n", &h, &mi, &s, &used) != 3 || used != 8 ||
        h > 23 || mi > 59 || s > 60) {
      return bad();
    }
    at += 9;
    if (at < text.size() && text[at] == '.') {
      int digits = 0;
      for (++at; at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])); ++at) {
        if (digits++ < 9) frac_ns = frac_ns * 10 + (text[at] - '0');
      }
      if (digits == 0) return bad();
      for (; digits < 9; ++digits) frac_ns *= 10;
    }
  }
  if (at < text.size() && text[at] == 'Z') ++at;
  if (at != text.size()) return bad();
  const int64_t days = days_from_civil(y, mo, d);
  return ((days * 24 + h) * 60 + mi) * 60 * int64_t{1'000'000'000} + int64_t{s} * 1'000'000'000 +
         frac_ns;
}

}  // namespace fxt
