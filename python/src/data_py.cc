// foxhunt.read_dbn, inspect, ingest and synth over the data layer (src/data).
//
// read_dbn copies each record's fixed layout (the struct of src/data/dbn.h, without any ts_out
// suffix) into one byte buffer per record type; the Python side views each buffer as a numpy
// structured array with DBN's field names. Definitions (whose layout differs per DBN version)
// come decoded, one dict per record.
#include <filesystem>
#include <map>

#include "bindings.h"
#include "core/progress.h"
#include "data/dbn.h"
#include "data/ingest.h"
#include "data/inspect.h"
#include "data/synth.h"

namespace fxt::python {

namespace {

nlohmann::json metadata_json(const dbn::Metadata& md) {
  nlohmann::json mappings = nlohmann::json::array();
  for (const auto& m : md.mappings) {
    nlohmann::json intervals = nlohmann::json::array();
    for (const auto& iv : m.intervals) {
      intervals.push_back(
          {{"start_date", iv.start_date}, {"end_date", iv.end_date}, {"symbol", iv.symbol}});
    }
    mappings.push_back({{"raw_symbol", m.raw_symbol}, {"intervals", intervals}});
  }
  return {{"version", md.version},
          {"dataset", md.dataset},
          {"schema", dbn::schema_name(md.schema)},
          {"start", md.start},
          {"end", md.end},
          {"limit", md.limit},
          {"record_count", md.record_count},
          {"stype_in", dbn::stype_name(md.stype_in)},
          {"stype_out", dbn::stype_name(md.stype_out)},
          {"ts_out", md.ts_out},
          {"symbols", md.symbols},
          {"partial", md.partial},
          {"not_found", md.not_found},
          {"mappings", mappings}};
}

nlohmann::json definition_json(const dbn::InstrumentDef& d) {
  return {{"instrument_id", d.instrument_id},
          {"ts_event", d.ts_event},
          {"ts_recv", d.ts_recv},
          {"min_price_increment", d.min_price_increment},
          {"display_factor", d.display_factor},
          {"unit_of_measure_qty", d.unit_of_measure_qty},
          {"expiration", d.expiration},
          {"contract_multiplier", d.contract_multiplier},
          {"raw_symbol", d.raw_symbol},
          {"currency", d.currency},
          {"unit_of_measure", d.unit_of_measure},
          {"exchange", d.exchange},
          {"asset", d.asset},
          {"group", d.group},
          {"security_type", d.security_type},
          {"instrument_class", std::string(d.instrument_class ? 1 : 0, d.instrument_class)}};
}

// The fixed size of a known record type, 0 for types read_dbn does not return as arrays.
size_t fixed_size(uint8_t rtype) {
  switch (rtype) {
    case dbn::kRTypeMbp0:
      return sizeof(dbn::TradeMsg);
    case dbn::kRTypeMbp1:
      return sizeof(dbn::Mbp1Msg);
    case dbn::kRTypeMbp10:
      return sizeof(dbn::Mbp10Msg);
    case dbn::kRTypeMbo:
      return sizeof(dbn::MboMsg);
    default:
      return 0;
  }
}

}  // namespace

void bind_data(py::module_& m) {
  m.def(
      "_read_dbn",
      [](const std::string& path, int fragment_version) {
        if (fragment_version < 0 || fragment_version > 3) {
          raise(UsageError("--dbn-version {}: expected 1, 2 or 3", fragment_version));
        }
        std::map<int, std::vector<uint8_t>> bytes;  // rtype -> packed fixed-size records
        std::map<int, uint64_t> other;              // rtype -> count of records not returned
        nlohmann::json definitions = nlohmann::json::array();
        nlohmann::json metadata;
        Status st;
        {
          py::gil_scoped_release release;
          dbn::ReaderOptions options;
          options.fragment_version = static_cast<uint8_t>(fragment_version);
          auto reader = dbn::Reader::open(path, options);
          if (!reader.ok()) {
            st = reader.status();
          } else {
            metadata = metadata_json(reader->metadata());
            dbn::RecordRef rec;
            while (st.ok() && reader->next(&rec)) {
              const size_t n = fixed_size(rec.rtype());
              if (n > 0) {
                // The reader has checked that the record is at least its type's size.
                auto& out = bytes[rec.rtype()];
                const auto* p = reinterpret_cast<const uint8_t*>(rec.header);
                out.insert(out.end(), p, p + n);
              } else if (rec.rtype() == dbn::kRTypeDefinition) {
                auto def = reader->decode_definition(rec);
                if (def.ok()) {
                  definitions.push_back(definition_json(*def));
                } else {
                  st = def.status();
                }
              } else {
                ++other[rec.rtype()];
              }
            }
            if (st.ok()) st = reader->status();
          }
        }
        check(st);
        py::dict arrays;
        for (auto& [rtype, b] : bytes) {
          const auto count = static_cast<py::ssize_t>(b.size());
          arrays[py::int_(rtype)] = array_from_vector(std::move(b), {count});
        }
        py::dict skipped;
        for (const auto& [rtype, count] : other) skipped[py::int_(rtype)] = count;
        return py::make_tuple(to_python(metadata), arrays, to_python(definitions), skipped);
      },
      py::arg("path"), py::arg("dbn_version") = 0);

  m.def(
      "inspect",
      [](const std::string& path, int dbn_version, int top_gaps) {
        if (dbn_version < 0 || dbn_version > 3) {
          raise(UsageError("--dbn-version {}: expected 1, 2 or 3", dbn_version));
        }
        InspectOptions options;
        options.dbn_fragment_version = static_cast<uint8_t>(dbn_version);
        options.top_gaps = top_gaps;
        Result<nlohmann::json> summary = InternalError("not run");
        {
          py::gil_scoped_release release;
          std::error_code ec;
          summary = std::filesystem::is_directory(path, ec) ? inspect_store(path, options)
                                                            : inspect_dbn(path, options);
        }
        return to_python(unwrap(std::move(summary)));
      },
      py::arg("path"), py::arg("dbn_version") = 0, py::arg("top_gaps") = 5,
      "what `fxt inspect --json PATH` prints, as a dict");

  m.def(
      "ingest",
      [](const std::vector<std::string>& sources, const std::string& out, const std::string& format,
         int dbn_version, const std::string& binance_market, const std::string& lobster_date) {
        IngestOptions options;
        options.format = unwrap(parse_source_format(format));
        if (dbn_version < 0 || dbn_version > 3) {
          raise(UsageError("--dbn-version {}: expected 1, 2 or 3", dbn_version));
        }
        options.dbn_fragment_version = static_cast<uint8_t>(dbn_version);
        options.binance_market = binance_market;
        options.lobster_date = lobster_date;
        Result<nlohmann::json> summary = InternalError("not run");
        {
          py::gil_scoped_release release;
          summary = ingest_sources(sources, options, out);
        }
        return to_python(unwrap(std::move(summary)));
      },
      py::arg("sources"), py::arg("out"), py::arg("format") = "auto", py::arg("dbn_version") = 0,
      py::arg("binance_market") = "auto", py::arg("lobster_date") = "",
      "what `fxt ingest --json SOURCES --out OUT` prints: [{store, meta}, ...]");

  m.def(
      "synth",
      [](const std::string& out, uint64_t events, uint64_t seed, double tick, double start_price,
         const std::string& symbol, double drift_skew, double momentum_skew, double regime_tau_s) {
        SynthConfig c;
        if (events == 0) raise(UsageError("--events must be at least 1"));
        if (!(tick > 0)) raise(UsageError("--tick {}: expected a positive price increment", tick));
        c.events = events;
        c.seed = seed;
        c.tick_px = static_cast<int64_t>(tick * 1e9 + 0.5);
        c.start_px = static_cast<int64_t>(start_price * 1e9 + 0.5);
        c.symbol = symbol;
        c.drift_market_skew = drift_skew;
        c.momentum_skew = momentum_skew;
        c.regime_tau_s = regime_tau_s;
        SynthStats s;
        Status st;
        {
          py::gil_scoped_release release;
          st = synthesize_market(c, out, &s);
        }
        check(st);
        return to_python(synth_stats_json(out, s));
      },
      py::arg("out"), py::arg("events") = SynthConfig{}.events, py::arg("seed") = 1,
      py::arg("tick") = 0.25, py::arg("start_price") = 5000.0,
      py::arg("symbol") = SynthConfig{}.symbol,
      py::arg("drift_skew") = SynthConfig{}.drift_market_skew,
      py::arg("momentum_skew") = SynthConfig{}.momentum_skew,
      py::arg("regime_tau_s") = SynthConfig{}.regime_tau_s,
      "`fxt synth`: writes a synthetic DBN mbp-10 file; returns `fxt synth --json`'s statistics "
      "(without the wall time)");
}

}  // namespace fxt::python
