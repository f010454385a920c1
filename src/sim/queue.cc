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

double queue_share_behind(const QueueModel& model, double front, double back) {
  front = std::max(front, 0.0);
  back = std::max(back, 0.0);
  double b = 0, f = 0;
  switch (model.kind) {
    case QueueModelKind::kRiskAverse:
      return 1.0;
    case QueueModelKind::kPower:
      b = std::pow(back, model.power);
      f = std::pow(front, model.power);
      break;
    case QueueModelKind::kLog:
      b = std::log1p(back);
      f = std::log1p(front);
      break;
  }
  if (b + f <= 0) return 1.0;
  return b / (b + f);
}

// ---- L2 ---------------------------------------------------------------------------

void L2Queue::join(double displayed, bool displayed_known) {
  known = displayed_known;
  ahead = displayed_known ? displayed : 0;
  level_size = displayed_known ? displayed : 0;
  traded = 0;
}

double L2Queue::on_trade(double size) {
  if (!known) return 0;  // we do not know the queue yet: nothing reaches us
  traded += size;
  const double beyond = size - ahead;
  ahead = std::max(0.0, ahead - size);
  return std::max(0.0, beyond);
}

void L2Queue::on_level(const QueueModel& model, double size, bool size_known) {
  if (!size_known) return;
  if (!known) {
    join(size, true);
    return;
  }
  // What the level would show if only the trades had happened.
  const double expected = std::max(0.0, level_size - traded);
  if (size < expected) {
    const double decrease = expected - size;
    const double front = ahead;
    const double back = std::max(0.0, expected - front);
    const double p = queue_share_behind(model, front, back);
    ahead = std::max(0.0, ahead - decrease * (1.0 - p));
  }
  ahead = std::min(ahead, size);  // never more ahead than the level holds
  level_size = size;
  traded = 0;
}

// ---- L3 ---------------------------------------------------------------------------

void L3Queue::join(std::vector<Ahead> orders) {
  ahead = std::move(orders);
  ahead_size = 0;
  for (const Ahead& a : ahead) ahead_size += a.size;
  pending_traded = 0;
}

double L3Queue::on_trade(double size) {
  const double eff = effective_ahead();
  const double consumed = std::min(size, eff);
  pending_traded += consumed;
  return std::max(0.0, size - eff);
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
  switch (e.action) {
    case 'C': {
      const double cut = std::min(e.sz, it->size);
      it->size -= cut;
      reduce(cut);
      if (it->size <= 0) removed = true;
      break;
    }
    case 'M':
      if (e.px != px || e.sz > it->size || e.sz <= 0) {
        // Priority lost (or the order left the level): it is behind us now.
        reduce(it->size);
        removed = true;
      } else {
        reduce(it->size - e.sz);
        it->size = e.sz;
      }
      break;
    case 'A':  // the same id added again replaces the old order at the back
      reduce(it->size);
      removed = true;
      break;
    default:
      break;
  }
  if (removed) ahead.erase(it);
  return removed;
}

}  // namespace fxt::sim
