// Names of the simulator's enums, as they appear in result files and messages.
#include "sim/types.h"

namespace fxt::sim {

const char* order_type_name(OrderType t) {
  switch (t) {
    case OrderType::kMarket:
      return "market";
    case OrderType::kLimit:
      return "limit";
    case OrderType::kPostOnly:
      return "post_only";
    case OrderType::kIoc:
      return "ioc";
    case OrderType::kFok:
      return "fok";
  }
  return "unknown";
}

const char* order_state_name(OrderState s) {
  switch (s) {
    case OrderState::kPending:
      return "pending";
    case OrderState::kOpen:
      return "open";
    case OrderState::kFilled:
      return "filled";
    case OrderState::kCanceled:
      return "canceled";
    case OrderState::kRejected:
      return "rejected";
    case OrderState::kExpired:
      return "expired";
  }
  return "unknown";
}

}  // namespace fxt::sim
