// foxhunt.Store (zero-copy numpy views of a snapshot store's memory-mapped columns) and
// foxhunt.features (the 40 features and the labels, the numbers `fxt features` writes).
//
// Every column array views the mapping directly: read-only, and its base is the Store object,
// which owns the StoreReader and so keeps the mapping alive as long as any array does.
#include <cstring>
#include <functional>

#include "bindings.h"
#include "data/store.h"
#include "features/features.h"
#include "features/labels.h"

namespace fxt::python {

namespace {

struct PyStore {
  StoreReader reader;
};

struct ColumnView {
  const void* data = nullptr;
  uint64_t rows = 0;
  int width = 1;
  py::dtype dtype;
};

template <typename T>
ColumnView view(const Column<T>& c) {
  return {c.data, c.rows, c.width, py::dtype::of<T>()};
}

// Python name -> the reader's column. Names follow src/data/store.h (cum_trade_count is
// `trade_count`, the name of its file and of `fxt features`' documentation).
const std::vector<std::pair<const char*, std::function<ColumnView(const StoreReader&)>>>&
column_table() {
  static const std::vector<std::pair<const char*, std::function<ColumnView(const StoreReader&)>>>
      table = {
          {"ts_ns", [](const StoreReader& r) { return view(r.ts_ns); }},
          {"ts_alt_ns", [](const StoreReader& r) { return view(r.ts_alt_ns); }},
          {"bid_px", [](const StoreReader& r) { return view(r.bid_px); }},
          {"ask_px", [](const StoreReader& r) { return view(r.ask_px); }},
          {"bid_sz", [](const StoreReader& r) { return view(r.bid_sz); }},
          {"ask_sz", [](const StoreReader& r) { return view(r.ask_sz); }},
          {"bid_ct", [](const StoreReader& r) { return view(r.bid_ct); }},
          {"ask_ct", [](const StoreReader& r) { return view(r.ask_ct); }},
          {"flags", [](const StoreReader& r) { return view(r.flags); }},
          {"trade_count", [](const StoreReader& r) { return view(r.cum_trade_count); }},
          {"signed_volume", [](const StoreReader& r) { return view(r.signed_volume); }},
          {"trade_ts_ns", [](const StoreReader& r) { return view(r.trade_ts_ns); }},
          {"trade_px", [](const StoreReader& r) { return view(r.trade_px); }},
          {"trade_sz", [](const StoreReader& r) { return view(r.trade_sz); }},
          {"trade_side", [](const StoreReader& r) { return view(r.trade_side); }},
          {"trade_snapshot", [](const StoreReader& r) { return view(r.trade_snapshot); }},
          {"event_ts_ns", [](const StoreReader& r) { return view(r.event_ts_ns); }},
          {"event_order_id", [](const StoreReader& r) { return view(r.event_order_id); }},
          {"event_px", [](const StoreReader& r) { return view(r.event_px); }},
          {"event_sz", [](const StoreReader& r) { return view(r.event_sz); }},
          {"event_action", [](const StoreReader& r) { return view(r.event_action); }},
          {"event_side", [](const StoreReader& r) { return view(r.event_side); }},
          {"event_flags", [](const StoreReader& r) { return view(r.event_flags); }},
          {"event_snapshot", [](const StoreReader& r) { return view(r.event_snapshot); }},
      };
  return table;
}

// A read-only array over the mapping whose base is `owner` (the Store object).
py::array column_array(const ColumnView& c, const py::object& owner) {
  std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(c.rows)};
  if (c.width > 1) shape.push_back(c.width);
  py::array a;
  if (c.rows == 0 || c.data == nullptr) {
    shape[0] = 0;
    a = py::array(c.dtype, shape);
  } else {
    a = py::array(c.dtype, shape, {}, c.data, owner);
  }
  a.attr("flags").attr("writeable") = false;
  return a;
}

}  // namespace

void bind_store(py::module_& m) {
  auto cls = py::class_<PyStore, std::shared_ptr<PyStore>>(m, "_Store", py::dynamic_attr());
  cls.def(py::init([](const std::string& dir, bool verify) {
            std::shared_ptr<PyStore> s;
            Status st;
            {
              py::gil_scoped_release release;
              auto r = StoreReader::open(dir, verify);
              if (r.ok()) {
                s = std::make_shared<PyStore>(PyStore{std::move(r).value()});
              } else {
                st = r.status();
              }
            }
            check(st);
            return s;
          }),
          py::arg("path"), py::arg("verify") = false);
  cls.def_property_readonly("path", [](const PyStore& s) { return s.reader.dir(); });
  cls.def_property_readonly("meta", [](const PyStore& s) { return to_python(s.reader.meta()); });
  cls.def_property_readonly("tick_px", [](const PyStore& s) { return s.reader.tick_px(); });
  cls.def_property_readonly("trade_rows", [](const PyStore& s) { return s.reader.trade_count(); });
  cls.def_property_readonly("event_rows", [](const PyStore& s) { return s.reader.event_count(); });
  cls.def("__len__", [](const PyStore& s) { return s.reader.size(); });
  for (const auto& [name, get] : column_table()) {
    cls.def_property_readonly(name, [get = get](const py::object& self) {
      return column_array(get(self.cast<const PyStore&>().reader), self);
    });
  }
  cls.def_property_readonly_static("column_names", [](const py::object&) {
    std::vector<std::string> names;
    for (const auto& entry : column_table()) names.emplace_back(entry.first);
    return names;
  });
  // The mapped address of a column (tests: the array's data pointer is the mapping's).
  cls.def("_address", [](const PyStore& s, const std::string& name) {
    for (const auto& [n, get] : column_table()) {
      if (name == n) return reinterpret_cast<uintptr_t>(get(s.reader).data);
    }
    raise(UsageError("no column '{}'", name));
  });

  m.def(
      "_features",
      [](const py::object& store_obj, int stride, bool standardised, std::vector<int> horizons,
         int64_t min_move_ticks) {
        const PyStore& s = store_obj.cast<const PyStore&>();
        LabelConfig lc;
        lc.horizons = std::move(horizons);
        lc.min_move_ticks = min_move_ticks;
        check(validate_label_config(lc));
        if (stride < 1) raise(UsageError("--stride must be >= 1 (got {})", stride));
        std::vector<float> x;
        Labels labels;
        const uint64_t n = s.reader.size();
        Status st;
        {
          py::gil_scoped_release release;
          FeatureConfig fc;
          fc.stride = stride;
          st = compute_features(s.reader, fc, &x);
          if (st.ok()) st = compute_labels(s.reader, lc, &labels);
          if (st.ok() && standardised) {
            standardise(measure_feature_stats(x.data(), 0, n), x.data(), n);
          }
        }
        check(st);
        const auto rows = static_cast<py::ssize_t>(n);
        const py::ssize_t nh = labels.horizons;
        py::array ts = column_array(view(s.reader.ts_ns), store_obj);
        return py::make_tuple(ts, array_from_vector(std::move(x), {rows, kFeatureDim}),
                              array_from_vector(std::move(labels.y), {rows, nh}),
                              array_from_vector(std::move(labels.mask), {rows, nh}));
      },
      py::arg("store"), py::arg("stride"), py::arg("standardised"), py::arg("horizons"),
      py::arg("min_move_ticks"));
  m.def("feature_names", [] {
    std::vector<std::string> names;
    for (const char* n : fxt::feature_names()) names.emplace_back(n);
    return names;
  });
}

}  // namespace fxt::python
