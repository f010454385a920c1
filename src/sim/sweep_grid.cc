#include "sim/sweep_grid.h"

#include <cmath>
#include <cstdlib>
#include <set>

#include "core/file_util.h"
#include "core/text.h"
#include "sim/engine.h"

namespace fxt::sim {
namespace {

bool valid_key(std::string_view k) {
  if (k.empty()) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

class GridReader {
 public:
  explicit GridReader(std::string path) : path_(std::move(path)) {}

  template <typename... Args>
  Status error(int line, fmt::format_string<Args...> f, Args&&... args) const {
    return InvalidInput("{}:{}: {}", path_, line, fmt::format(f, std::forward<Args>(args)...));
  }

  // One scalar: "string", 'literal', a number as written, true or false.
  Result<GridValue> scalar(std::string_view token, int line) const {
    token = trim_blanks(token);
    GridValue v;
    v.line = line;
    if (token.size() >= 2 && token.front() == '\'' && token.back() == '\'') {
      v.text = std::string(token.substr(1, token.size() - 2));
      if (v.text.find('\'') == std::string::npos) return v;
    } else if (token.size() >= 2 && token.front() == '"' && token.back() == '"') {
      std::string out;
      bool ok = true;
      for (size_t i = 1; i + 1 < token.size(); ++i) {
        char c = token[i];
        if (c == '\\') {
          if (i + 2 >= token.size() || (token[i + 1] != '"' && token[i + 1] != '\\')) ok = false;
          c = token[++i];
        } else if (c == '"') {
          ok = false;
        }
        out += c;
      }
      if (ok) {
        v.text = std::move(out);
        return v;
      }
    } else if (token == "true" || token == "false") {
      v.kind = GridValue::kBool;
      v.text = std::string(token);
      return v;
    } else if (!token.empty()) {
      const std::string s(token);
      char* end = nullptr;
      const double d = std::strtod(s.c_str(), &end);
      if (end == s.c_str() + s.size() && std::isfinite(d) && s.find_first_of("xXpP") == s.npos) {
        v.kind = GridValue::kNumber;
        v.text = s;
        return v;
      }
    }
    return error(line, "bad value '{}' (expected a \"string\", a number, true or false)", token);
  }

  // The items of an array "[a, b, ...]" (brackets included, commas outside quotes).
  Result<std::vector<GridValue>> array(std::string_view text, int line) const {
    std::vector<GridValue> items;
    std::string_view body = trim_blanks(text.substr(1, text.size() - 2));
    if (body.empty()) return items;
    char quote = 0;
    size_t start = 0;
    for (size_t i = 0; i <= body.size(); ++i) {
      const char c = i < body.size() ? body[i] : ',';
      if (quote != 0) {
        if (c == '\\' && quote == '"')
          ++i;
        else if (c == quote)
          quote = 0;
        continue;
      }
      if (c == '"' || c == '\'') {
        quote = c;
      } else if (c == '[') {
        return error(line, "nested lists are not supported in a grid");
      } else if (c == ',') {
        const std::string_view item = trim_blanks(body.substr(start, i - start));
        start = i + 1;
        if (item.empty() && i == body.size()) break;  // trailing comma
        FXT_ASSIGN_OR_RETURN(GridValue v, scalar(item, line));
        items.push_back(std::move(v));
      }
    }
    return items;
  }

 private:
  std::string path_;
};

// A value's text holds a whole array: brackets balanced and no string left open.
bool array_closed(std::string_view text) {
  bool closed_strings = false;
  return toml_bracket_depth(text, &closed_strings) <= 0 && closed_strings;
}

}  // namespace

Result<SweepGrid> parse_sweep_grid(const std::string& path, const std::string& text,
                                   size_t max_lanes) {
  GridReader reader(path);
  SweepGrid grid;
  grid.path = path;
  std::map<std::string, GridValue> fixed;
  std::vector<std::pair<std::string, std::vector<GridValue>>> axes;
  std::vector<GridLane> explicit_lanes;
  std::set<std::string> key_seen;
  enum class Table { kTop, kFixed, kGrid, kLane } table = Table::kTop;
  std::set<std::string> tables_seen;
  std::set<std::string> table_keys;  // keys of the current table
  int grid_line = 0;
  auto note_key = [&](const std::string& k) {
    if (key_seen.insert(k).second) grid.keys.push_back(k);
  };

  const std::vector<std::string> lines = split_fields(text, '\n');
  for (size_t n = 0; n < lines.size(); ++n) {
    const int line = static_cast<int>(n + 1);
    std::string_view l = trim_blanks(strip_toml_comment(lines[n]));
    if (l.empty()) continue;
    if (l.front() == '[') {
      const bool array_table = l.size() >= 4 && l.substr(0, 2) == "[[";
      const std::string_view name =
          array_table
              ? (l.substr(l.size() - 2) == "]]" ? trim_blanks(l.substr(2, l.size() - 4)) : "")
              : (l.back() == ']' ? trim_blanks(l.substr(1, l.size() - 2)) : "");
      table_keys.clear();
      if (array_table && name == "lane") {
        table = Table::kLane;
        explicit_lanes.push_back(GridLane{{}, line});
        continue;
      }
      if (!array_table && (name == "fixed" || name == "grid")) {
        if (!tables_seen.insert(std::string(name)).second)
          return reader.error(line, "[{}] given twice", name);
        table = name == "fixed" ? Table::kFixed : Table::kGrid;
        if (table == Table::kGrid) grid_line = line;
        continue;
      }
      return reader.error(line, "unknown table '{}' (expected [fixed], [grid] or [[lane]])", l);
    }
    const size_t eq = l.find('=');
    if (eq == std::string_view::npos)
      return reader.error(line, "expected key = value, got '{}'", l);
    const std::string key(trim_blanks(l.substr(0, eq)));
    std::string value(trim_blanks(l.substr(eq + 1)));
    if (!valid_key(key)) return reader.error(line, "bad key '{}' (letters, digits and _)", key);
    if (!table_keys.insert(key).second) return reader.error(line, "{} given twice", key);
    const bool is_array = !value.empty() && value.front() == '[';
    if (is_array) {  // a list may continue over the next lines
      while (!array_closed(value) && n + 1 < lines.size())
        value.append(1, ' ').append(trim_blanks(strip_toml_comment(lines[++n])));
      if (!array_closed(value) || value.back() != ']')
        return reader.error(line, "{}: list not closed with ']'", key);
    }
    switch (table) {
      case Table::kTop: {
        if (key != "strategy")
          return reader.error(line,
                              "{}: parameters go under [fixed], [grid] or [[lane]]; only "
                              "'strategy' stands at the top",
                              key);
        FXT_ASSIGN_OR_RETURN(GridValue v, reader.scalar(value, line));
        if (v.kind != GridValue::kString || is_array)
          return reader.error(line, "strategy: expected a string such as \"mm\"");
        grid.strategy = v.text;
        break;
      }
      case Table::kFixed:
      case Table::kLane: {
        if (is_array)
          return reader.error(line, "{}: a list belongs in [grid]; here give one value", key);
        FXT_ASSIGN_OR_RETURN(GridValue v, reader.scalar(value, line));
        if (table == Table::kFixed) {
          fixed[key] = v;
        } else {
          explicit_lanes.back().values[key] = v;
        }
        note_key(key);
        break;
      }
      case Table::kGrid: {
        if (!is_array)
          return reader.error(line,
                              "{}: expected a list such as [1, 2] in [grid] (one value: "
                              "put it in [fixed])",
                              key);
        if (fixed.count(key))
          return reader.error(line, "{} is already fixed at line {}", key, fixed[key].line);
        FXT_ASSIGN_OR_RETURN(std::vector<GridValue> items, reader.array(value, line));
        if (items.empty())
          return reader.error(line, "{}: empty list: the product would have no lanes", key);
        axes.emplace_back(key, std::move(items));
        grid.axes.push_back(key);
        note_key(key);
        break;
      }
    }
  }
  for (const auto& [key, items] : axes)
    if (fixed.count(key))
      return reader.error(items.front().line, "{} is already fixed at line {}", key,
                          fixed[key].line);

  size_t product = axes.empty() ? 0 : 1;
  for (const auto& [key, items] : axes) {
    if (product > max_lanes / items.size())
      return reader.error(grid_line, "the product has more than {} lanes", max_lanes);
    product *= items.size();
  }
  if (product + explicit_lanes.size() > max_lanes)
    return reader.error(grid_line, "more than {} lanes", max_lanes);
  if (product + explicit_lanes.size() == 0)
    return InvalidInput("{}: no lanes: give lists under [grid] or [[lane]] tables", path);
  grid.lanes.reserve(product + explicit_lanes.size());
  for (size_t i = 0; i < product; ++i) {
    GridLane lane{fixed, grid_line};
    size_t rest = i;
    for (size_t a = axes.size(); a-- > 0;) {  // the last key varies fastest
      const auto& items = axes[a].second;
      lane.values[axes[a].first] = items[rest % items.size()];
      rest /= items.size();
    }
    grid.lanes.push_back(std::move(lane));
  }
  for (GridLane& l : explicit_lanes) {
    GridLane lane{fixed, l.line};
    for (auto& [k, v] : l.values) lane.values[k] = v;
    grid.lanes.push_back(std::move(lane));
  }
  return grid;
}

Result<SweepGrid> load_sweep_grid(const std::string& path) {
  FXT_ASSIGN_OR_RETURN(std::string text, read_file(path));
  return parse_sweep_grid(path, text);
}

namespace {

bool is_sim_key(const std::string& k) {
  static const std::set<std::string> kKeys = {
      "queue",     "latency",   "feed_latency",   "entry_latency",  "response_latency", "fees",
      "maker_bps", "taker_bps", "maker_per_unit", "taker_per_unit", "multiplier",       "l2"};
  return kKeys.count(k) > 0;
}

// Sets one simulator key of a lane.
Status apply_sim_key(const std::string& key, const GridValue& v, SimConfig* c) {
  auto want = [&](GridValue::Kind kind, const char* what) -> Status {
    if (v.kind == kind) return Status::Ok();
    return UsageError("{}: expected {}, got {}", key, what,
                      v.kind == GridValue::kString ? fmt::format("\"{}\"", v.text) : v.text);
  };
  if (key == "queue") {
    FXT_RETURN_IF_ERROR(want(GridValue::kString, "a queue model such as \"power:2\""));
    FXT_ASSIGN_OR_RETURN(c->queue, parse_queue_model(v.text));
  } else if (key == "latency") {
    FXT_RETURN_IF_ERROR(want(GridValue::kString, "a string such as \"entry=1ms,response=1ms\""));
    FXT_ASSIGN_OR_RETURN(LatencyConfig l, parse_latency(v.text));
    c->latency.feed_ns = l.feed_ns;
    c->latency.entry_ns = l.entry_ns;
    c->latency.response_ns = l.response_ns;
  } else if (key == "feed_latency" || key == "entry_latency" || key == "response_latency") {
    if (v.kind == GridValue::kBool)
      return UsageError("{}: expected a duration such as \"1ms\"", key);
    FXT_ASSIGN_OR_RETURN(int64_t ns, parse_duration_ns(v.text));
    (key == "feed_latency"    ? c->latency.feed_ns
     : key == "entry_latency" ? c->latency.entry_ns
                              : c->latency.response_ns) = ns;
  } else if (key == "fees") {
    FXT_RETURN_IF_ERROR(
        want(GridValue::kString, "a string such as \"maker=-0.2bps,taker=0.5bps\""));
    FXT_ASSIGN_OR_RETURN(c->fees, parse_fees(v.text));
  } else if (key == "l2") {
    FXT_RETURN_IF_ERROR(want(GridValue::kBool, "true or false"));
    c->use_l3 = v.text != "true";
  } else {
    FXT_RETURN_IF_ERROR(want(GridValue::kNumber, "a number"));
    const double d = std::strtod(v.text.c_str(), nullptr);
    if (key == "multiplier") {
      if (!(d > 0)) return UsageError("multiplier: must be > 0, got {}", v.text);
      c->instrument.multiplier = d;
    } else {
      (key == "maker_bps"        ? c->fees.maker_bps
       : key == "taker_bps"      ? c->fees.taker_bps
       : key == "maker_per_unit" ? c->fees.maker_per_unit
                                 : c->fees.taker_per_unit) = d;
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<Lane>> grid_lanes(const SweepGrid& grid, const std::string& strategy,
                                     const SimConfig& base, const StrategyInputs& inputs) {
  const std::string name = grid.strategy.empty() ? strategy : grid.strategy;
  auto at = [&](int line, size_t lane, const Status& st) {
    return Status(st.code() == StatusCode::kOk ? StatusCode::kUsage : st.code(),
                  fmt::format("{}:{}: lane {}: {}", grid.path, line, lane, st.message()));
  };
  std::vector<Lane> lanes;
  lanes.reserve(grid.lanes.size());
  for (size_t i = 0; i < grid.lanes.size(); ++i) {
    const GridLane& g = grid.lanes[i];
    Lane lane;
    lane.strategy = name;
    lane.sim = base;
    const bool split_latency = g.values.count("feed_latency") || g.values.count("entry_latency") ||
                               g.values.count("response_latency");
    if (g.values.count("latency") && split_latency)
      return at(
          g.values.at("latency").line, i,
          UsageError("give latency or feed_latency/entry_latency/response_latency, not both"));
    const bool split_fees = g.values.count("maker_bps") || g.values.count("taker_bps") ||
                            g.values.count("maker_per_unit") || g.values.count("taker_per_unit");
    if (g.values.count("fees") && split_fees)
      return at(g.values.at("fees").line, i,
                UsageError("give fees or maker_bps/taker_bps/maker_per_unit/taker_per_unit, "
                           "not both"));
    for (const auto& [key, v] : g.values) {
      if (is_sim_key(key)) {
        Status st = apply_sim_key(key, v, &lane.sim);
        if (!st.ok()) return at(v.line, i, st);
      } else {
        lane.params.push_back(fmt::format("{}={}", key, v.text));
      }
    }
    // The strategy is built once here so that a bad value names its line.
    Result<StrategyParams> params = StrategyParams::parse(lane.params);
    Status st = params.status();
    if (st.ok()) st = make_strategy_factory(name, std::move(params).value(), inputs).status();
    if (!st.ok()) {
      int line = g.line;
      for (const auto& [key, v] : g.values)
        if (st.message().find(fmt::format("--param {}=", key)) != std::string::npos ||
            st.message().find(fmt::format("--param {}:", key)) != std::string::npos)
          line = v.line;
      return at(line, i, st);
    }
    lanes.push_back(std::move(lane));
  }
  return lanes;
}

}  // namespace fxt::sim
