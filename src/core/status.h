// Status and Result<T>: how every recoverable failure travels in foxhunt.
//
// Anything a user can cause (a bad file, a bad flag, a mismatched checkpoint)
// is reported as a Status carrying a one-line message that names the file,
// the position and what was expected. Exceptions never cross a module API;
// assertions are kept for programmer errors.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace fxt {

enum class StatusCode {
  kOk = 0,
  kInvalidInput,  // malformed or unexpected data in a file the user gave us
  kUsage,         // a bad flag or argument combination
  kNotFound,      // a file or store that does not exist
  kIoError,       // the operating system refused a read/write
  kInternal,      // a bug or an environment failure
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // The process exit code of DESIGN §1: 2 for bad usage or bad input, 1 otherwise.
  int exit_code() const {
    switch (code_) {
      case StatusCode::kOk:
        return 0;
      case StatusCode::kInvalidInput:
      case StatusCode::kUsage:
      case StatusCode::kNotFound:
        return 2;
      default:
        return 1;
    }
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status InvalidInput(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kInvalidInput, fmt::format(f, std::forward<Args>(args)...)};
}
template <typename... Args>
Status UsageError(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kUsage, fmt::format(f, std::forward<Args>(args)...)};
}
template <typename... Args>
Status NotFound(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kNotFound, fmt::format(f, std::forward<Args>(args)...)};
}
template <typename... Args>
Status IoError(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kIoError, fmt::format(f, std::forward<Args>(args)...)};
}
template <typename... Args>
Status InternalError(fmt::format_string<Args...> f, Args&&... args) {
  return {StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...)};
}

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace fxt

// Early-return helpers: propagate a failed Status / Result to the caller.
#define FXT_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::fxt::Status fxt_status_ = (expr);        \
    if (!fxt_status_.ok()) return fxt_status_; \
  } while (0)

#define FXT_CONCAT_INNER(a, b) a##b
#define FXT_CONCAT(a, b) FXT_CONCAT_INNER(a, b)
#define FXT_ASSIGN_OR_RETURN(lhs, expr) \
  FXT_ASSIGN_OR_RETURN_IMPL(FXT_CONCAT(fxt_result_, __LINE__), lhs, expr)
#define FXT_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()
