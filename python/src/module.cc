// The extension module foxhunt._foxhunt: exceptions and the areas' bindings. The public API is
// the pure-Python package around it (python/foxhunt/__init__.py, docs/PYTHON.md).
#include "bindings.h"

#include "core/log.h"
#include "core/progress.h"

namespace fxt::python {

py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

nlohmann::json from_python(const py::handle& obj) {
  const std::string text = py::str(py::module_::import("json").attr("dumps")(obj));
  return nlohmann::json::parse(text);
}

}  // namespace fxt::python

PYBIND11_MODULE(_foxhunt, m) {
  namespace py = pybind11;
  using fxt::python::StatusError;
  m.doc() = "foxhunt's C++ core (use the foxhunt package, not this module)";

  // Error <- Exception; InputError <- Error. Owned by the module for the process's life.
  static py::handle error = PyErr_NewException("foxhunt.Error", PyExc_Exception, nullptr);
  static py::handle input_error = PyErr_NewException("foxhunt.InputError", error.ptr(), nullptr);
  m.add_object("Error", error);
  m.add_object("InputError", input_error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const StatusError& e) {
      PyErr_SetString(e.status().exit_code() == 2 ? input_error.ptr() : error.ptr(), e.what());
    }
  });

  m.def(
      "set_quiet",
      [](bool quiet) {
        fxt::Progress::set_enabled(!quiet);
        fxt::set_log_level(quiet ? fxt::LogLevel::kError : fxt::LogLevel::kInfo);
      },
      py::arg("quiet") = true, "silence progress lines and info messages on stderr");
  m.attr("FEATURE_DIM") = 40;
  m.attr("__version__") = FXT_VERSION;

  fxt::python::bind_store(m);
  fxt::python::bind_data(m);
  fxt::python::bind_model(m);
  fxt::python::bind_backtest(m);
}
