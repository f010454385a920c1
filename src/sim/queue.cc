#include "sim/queue.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "sim/engine.h"

namespace fxt::sim {

Result<QueueModel> parse_queue_model(const std::string& text) {
  QueueModel m;
  if (text == "risk-averse") {
    m.kind = QueueModelKind::kRiskAverse;
    return m;
  }
  if (text == "log") {
    m.kind = QueueModelKind::kLog;
    return m;
  }
  if (text.rfind("power:", 0) == 0) {
    const std::string n = text.substr(6);
    char* end = nullptr;
    const double v = n.empty() ? 0.0 : std::strtod(n.c_str(), &end);
    if (!n.empty() && end == n.c_str() + n.size() && std::isfinite(v) && v > 0) {
      m.kind = QueueModelKind::kPower;
      m.power = v;
      return m;
    }
  }
  return UsageError(
      "unknown queue model '{}': expected 'risk-averse', 'power:<n>' with n > 0 (e.g. power:2) "
      "or 'log'",
      text);
}

std::string queue_model_name(const QueueModel& m) {
  switch (m.kind) {
    case QueueModelKind::kRiskAverse:
      return "risk-averse";
    case QueueModelKind::kPower:
      return fmt::format("power:{}", m.power);
    case QueueModelKind::kLog:
      return "log";
  }
  return "unknown";
}

// ---- L3 ---------------------------------------------------------------------------

void L3Queue::join(std::vector<Ahead> orders) {
  ahead = std::move(orders);
  ahead_size = 0;
  for (const Ahead& a : ahead) ahead_size += a.size;
  pending_traded = 0;
}

double L3Queue::on_trade(double size) {
  return fifo_on_trade(ahead_size, &pending_traded, size);
}

void L3Queue::reduce(double amount) {
  ahead_size = std::max(0.0, ahead_size - amount);
  pending_traded = std::max(0.0, pending_traded - amount);
}

bool L3Queue::on_event(const OrderEvent& e, int64_t px) {
  auto it = std::find_if(ahead.begin(), ahead.end(),
                         [&](const Ahead& a) { return a.order_id == e.order_id; });
  if (it == ahead.end()) return false;
  bool removed = false;
  const double cut = fifo_ahead_cut(e.action, e.px, e.sz, px, it->size, &removed);
  reduce(cut);
  if (removed)
    ahead.erase(it);
  else if (e.action == 'M')
    it->size = e.sz;  // keeps its place with its new size
  else
    it->size -= cut;
  return removed;
}

}  // namespace fxt::sim
