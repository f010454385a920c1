#include "sim/results.h"

#include <filesystem>
#include <string_view>
#include <system_error>

#include <fmt/format.h>

#include "core/file_util.h"
#include "data/decimal.h"

namespace fxt::sim {
namespace {

const char* side_name(Side side) {
  return side == Side::kBuy ? "buy" : "sell";
}

// RFC 4180 quoting, only when the text needs it.
std::string csv_field(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  quoted += '"';
  return quoted;
}

// Writes `path` through a temporary name: the header line, then one line per row from
// `format_row`, handed to the writer in chunks of about 64 KiB.
template <typename Rows>
Status write_csv(const std::string& path, std::string_view header, const Rows& rows,
                 void (*format_row)(std::string*, const typename Rows::value_type&)) {
  FXT_ASSIGN_OR_RETURN(BufferedFileWriter writer, BufferedFileWriter::create(path, true));
  std::string buffer(header);
  buffer += '\n';
  for (const auto& row : rows) {
    format_row(&buffer, row);
    if (buffer.size() >= (1u << 16)) {
      FXT_RETURN_IF_ERROR(writer.write(buffer));
      buffer.clear();
    }
  }
  FXT_RETURN_IF_ERROR(writer.write(buffer));
  return writer.commit();
}

void format_order(std::string* out, const OrderRecord& o) {
  fmt::format_to(std::back_inserter(*out), "{},{},{},{},{},{},{},{},{},{},{},{}\n", o.order_id,
                 o.sent_ns, o.arrive_ns, o.done_ns, side_name(o.side), order_type_name(o.type),
                 format_decimal(o.px, 9), o.qty, o.filled_qty, o.avg_fill_px,
                 order_state_name(o.state), csv_field(o.reason));
}

void format_fill(std::string* out, const Fill& f) {
  fmt::format_to(std::back_inserter(*out), "{},{},{},{},{},{},{}\n", f.ts_ns, f.order_id,
                 side_name(f.side), format_decimal(f.px, 9), f.qty, f.fee, f.maker ? 1 : 0);
}

void format_equity(std::string* out, const EquityPoint& e) {
  fmt::format_to(std::back_inserter(*out), "{},{},{},{},{}\n", e.ts_ns, e.position, e.cash, e.mid,
                 e.equity);
}

}  // namespace

Status write_backtest_results(const std::string& run_dir, const BacktestResult& result,
                              const nlohmann::json& stats) {
  std::error_code ec;
  std::filesystem::create_directories(run_dir, ec);
  if (ec) return IoError("{}: cannot create the run directory: {}", run_dir, ec.message());
  const std::string dir = run_dir + "/";
  FXT_RETURN_IF_ERROR(write_csv(dir + "orders.csv",
                                "order_id,sent_ns,arrive_ns,done_ns,side,type,px,qty,filled_qty,"
                                "avg_fill_px,state,reason",
                                result.orders, &format_order));
  FXT_RETURN_IF_ERROR(write_csv(dir + "fills.csv", "ts_ns,order_id,side,px,qty,fee,maker",
                                result.fills, &format_fill));
  FXT_RETURN_IF_ERROR(write_csv(dir + "equity.csv", "ts_ns,position,cash,mid,equity", result.equity,
                                &format_equity));
  FXT_RETURN_IF_ERROR(write_file_atomic(dir + "stats.json", stats.dump(2) + "\n"));
  return fsync_dir(run_dir);
}

}  // namespace fxt::sim
