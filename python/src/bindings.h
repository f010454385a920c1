// Shared pieces of the foxhunt Python module (docs/PYTHON.md): how a Status becomes a Python
// exception, JSON <-> Python objects, numpy arrays that own a moved std::vector, and the
// registration function of each area's bindings.
//
// Errors: a Status whose exit code would be 2 (bad input, bad usage, not found) raises
// foxhunt.InputError, any other foxhunt.Error (InputError derives from Error); the message is
// the CLI's one-line message without the "fxt: error: " prefix.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <nlohmann/json.hpp>

#include "core/status.h"

namespace fxt::python {
namespace py = pybind11;

// Thrown by raise(); translated to foxhunt.InputError / foxhunt.Error by the module.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const char* what() const noexcept override { return status_.message().c_str(); }
  const Status& status() const { return status_; }

 private:
  Status status_;
};

[[noreturn]] inline void raise(const Status& status) {
  throw StatusError(status);
}
inline void check(const Status& status) {
  if (!status.ok()) raise(status);
}
template <typename T>
T unwrap(Result<T> result) {
  if (!result.ok()) raise(result.status());
  return std::move(result).value();
}

// JSON <-> Python through the json module (dicts, lists, str, int, float, bool, None).
py::object to_python(const nlohmann::json& j);
nlohmann::json from_python(const py::handle& obj);

// A numpy array of `shape` that takes ownership of `values` (no copy).
template <typename T>
py::array_t<T> array_from_vector(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array_t<T>(std::move(shape), owned->data(), free_when_done);
}

void bind_store(py::module_& m);     // store_py.cc: Store, features
void bind_data(py::module_& m);      // data_py.cc: read_dbn, inspect, ingest, synth
void bind_model(py::module_& m);     // model_py.cc: train, evaluate, predict
void bind_backtest(py::module_& m);  // backtest_py.cc: built-in and Python strategies

}  // namespace fxt::python
