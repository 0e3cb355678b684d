// python/src/module.cpp — the Python module `kvplan`: plan/'s typed Scenario and its answers, with
// results as plain Python objects (docs/library.md).
//
//   import kvplan
//   s = kvplan.Scenario(model="llama-3.1-8b", gpu="h100-sxm", kv_cache_dtype="fp8", max_model_len=8192)
//   s.memory()["requests_at_max_len"]          # the dict `kvplan memory --json` prints
//   kvplan.load_scenario("data/scenarios/chat-h100.json").simulate()["per_request"]["ttft_ms"]
//
// Keywords are the settings table's flags with '-' written '_' (settings.h), or a file section
// given as a dict (engine={"max_model_len": 8192}); values are Python ints, floats, bools, strings
// or None (an optional setting's derived default). Bad input raises kvplan.ConfigError (a
// ValueError) with the message the CLI prints, naming the flag, the value and the rule.
// The *_json() methods return the CLI's --json text byte for byte (the same plan:: renderer and
// json_text), so the three ways in can be compared.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kvplan/calibration/serving_run.h"
#include "kvplan/core/atomic_file.h"
#include "kvplan/core/error.h"
#include "kvplan/core/json_input.h"
#include "kvplan/plan/memory.h"
#include "kvplan/plan/runs_fit.h"
#include "kvplan/plan/scenario.h"
#include "kvplan/plan/scenario_file.h"
#include "kvplan/plan/settings.h"
#include "kvplan/plan/simulate.h"
#include "kvplan/sim/time.h"

#include "dict_writer.h"

namespace py = pybind11;

namespace kvplan::python {
namespace {

// nlohmann::json -> dict / list / int / float / bool / str / None.
py::object to_python(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(j.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(j.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(j.get<double>());
    case nlohmann::json::value_t::string: return py::str(j.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const nlohmann::json& v : j) out.append(to_python(v));
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = j.begin(); it != j.end(); ++it) out[py::str(it.key())] = to_python(it.value());
      return out;
    }
    default: return py::none();  // binary, discarded: never produced by plan/
  }
}

// A Python value as the text Setting::set_text reads (what a command line would carry).
std::string setting_text(const std::string& name, const py::handle& value) {
  if (value.is_none()) return "";
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(value)) return py::str(value).cast<std::string>();
  if (py::isinstance<py::float_>(value)) {
    const double v = value.cast<double>();
    if (!std::isfinite(v)) throw ConfigError("--" + name + "=" + py::str(value).cast<std::string>() + " must be a finite number");
    return py::repr(value).cast<std::string>();  // shortest text that reads back as the same double
  }
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw ConfigError("--" + name + ": a " + py::type::of(value).attr("__name__").cast<std::string>() +
                    " is not a setting value (int, float, bool, str or None)");
}

// Applies keyword settings: flag_with_underscores=value, or section={key: value}.
void apply(plan::Scenario& s, const py::kwargs& kwargs) {
  const std::vector<std::string>& sections = plan::setting_sections();
  for (const auto& [key, value] : kwargs) {
    const std::string name = key.cast<std::string>();
    if (py::isinstance<py::dict>(value) && std::find(sections.begin(), sections.end(), name) != sections.end()) {
      for (const auto& [inner_key, inner_value] : value.cast<py::dict>()) {
        const std::string file_key = name + "." + inner_key.cast<std::string>();
        const plan::Setting& setting = plan::setting(file_key);  // unknown: ConfigError with the closest names
        setting.set(s, setting_text(setting.flag, inner_value));
      }
      continue;
    }
    std::string flag = name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const plan::Setting& setting = plan::setting(flag);
    setting.set(s, setting_text(setting.flag, value));
  }
}

// The scenario as Python sees it: plan::Scenario plus the file's name and compare variants, and
// the scenario resolved (model and GPU loaded, cross-field rules checked) when it is made: a bad
// model or GPU raises at construction with the CLI's message, and memory() answers from the
// resolved scenario instead of resolving the presets again on every call.
struct PyScenario {
  plan::ScenarioFile file;
  std::shared_ptr<const plan::ResolvedScenario> resolved;

  void resolve() { resolved = std::make_shared<const plan::ResolvedScenario>(plan::resolve(file.scenario)); }
};

// Per-request results, one list per column (numpy.asarray / pandas.DataFrame take them as they are).
py::dict per_request_columns(const std::vector<sim::RequestRecord>& records) {
  py::list id, replica, user, turn, prompt, output, cached, arrival, queue, ttft, tpot, e2e, gap, preemptions;
  for (const sim::RequestRecord& r : records) {
    id.append(r.id);
    replica.append(r.replica);
    user.append(r.user);
    turn.append(r.turn);
    prompt.append(r.prompt_tokens);
    output.append(r.output_tokens);
    cached.append(r.cached_tokens);
    arrival.append(sim::ns_to_seconds(r.arrival_ns));
    queue.append(static_cast<double>(r.queue_ns()) / 1e6);
    ttft.append(static_cast<double>(r.ttft_ns()) / 1e6);
    tpot.append(r.tpot_ns() / 1e6);
    e2e.append(static_cast<double>(r.e2e_ns()) / 1e6);
    gap.append(static_cast<double>(r.max_gap_ns) / 1e6);
    preemptions.append(r.preemptions);
  }
  py::dict d;
  d["id"] = id;
  d["replica"] = replica;
  d["user"] = user;
  d["turn"] = turn;
  d["prompt_tokens"] = prompt;
  d["output_tokens"] = output;
  d["cached_tokens"] = cached;
  d["arrival_s"] = arrival;
  d["queue_ms"] = queue;
  d["ttft_ms"] = ttft;
  d["tpot_ms"] = tpot;
  d["e2e_ms"] = e2e;
  d["max_gap_ms"] = gap;
  d["preemptions"] = preemptions;
  return d;
}

struct Run {
  plan::SimulationAnswer answer;
  std::vector<sim::RequestRecord> records;
};

Run run_simulation(const plan::Scenario& s, bool keep_requests) {
  Run run;
  sim::RunHooks hooks;
  if (keep_requests) hooks.on_request = [&run](const sim::RequestRecord& r) { run.records.push_back(r); };
  py::gil_scoped_release unlocked;  // pure C++ from here; other Python threads may run
  run.answer = plan::simulate(s, hooks);
  return run;
}

plan::CapacityAnswer run_capacity(const plan::Scenario& s, double tolerance, double start) {
  plan::CapacityRequest request;
  request.tolerance = tolerance;
  request.start = start;
  py::gil_scoped_release unlocked;
  return plan::find_capacity(s, request);
}

}  // namespace
}  // namespace kvplan::python

PYBIND11_MODULE(kvplan, m) {
  namespace kp = kvplan::python;
  namespace plan = kvplan::plan;
  m.doc() = "kvplan: KV-cache memory plans, serving simulation and capacity search (docs/library.md)";
  py::register_exception<kvplan::ConfigError>(m, "ConfigError", PyExc_ValueError);

  py::class_<kp::PyScenario>(m, "Scenario",
                             "A deployment question: keyword settings by their flags with '_' for '-' "
                             "(max_model_len=8192, kv_cache_dtype='fp8'), or sections as dicts "
                             "(engine={'max_model_len': 8192}). Unset settings take kvplan's defaults.")
      .def(py::init([](const py::kwargs& kwargs) {
        kp::PyScenario s;
        kp::apply(s.file.scenario, kwargs);
        s.resolve();
        return s;
      }))
      .def("replace",
           [](const kp::PyScenario& self, const py::kwargs& kwargs) {
             kp::PyScenario s = self;
             kp::apply(s.file.scenario, kwargs);
             s.resolve();
             return s;
           },
           "A copy with some settings changed (same keywords as the constructor).")
      .def_property_readonly("name", [](const kp::PyScenario& self) { return self.file.name; })
      .def("settings",
           [](const kp::PyScenario& self) { return plan::non_default_values(self.file.scenario); },
           "The settings that differ from the defaults: {flag: value as text}.")
      .def("to_json", [](const kp::PyScenario& self) { return plan::scenario_json(self.file); },
           "The scenario file (version 2) text.")
      .def("memory",
           [](const kp::PyScenario& self) {
             kp::DictWriter w;
             plan::write_memory(plan::answer_memory(*self.resolved), w);
             return w.take();
           },
           "The memory plan: the dict `kvplan memory --json` prints.")
      .def("memory_json",
           [](const kp::PyScenario& self) {
             return kvplan::json_text(plan::memory_json(plan::answer_memory(*self.resolved)), 2);
           },
           "`kvplan memory --json` text, byte for byte (without the final newline).")
      .def("simulate",
           [](const kp::PyScenario& self, bool per_request) {
             kp::Run run = kp::run_simulation(self.file.scenario, per_request);
             py::dict d = kp::to_python(plan::simulation_json(run.answer));
             if (per_request) d["per_request"] = kp::per_request_columns(run.records);
             return d;
           },
           py::arg("per_request") = true,
           "One simulated run: the summary `kvplan simulate --json` prints, plus 'per_request': one list "
           "per column (id, ttft_ms, tpot_ms, e2e_ms, ...) in completion order.")
      .def("simulate_json",
           [](const kp::PyScenario& self) {
             kp::Run run = kp::run_simulation(self.file.scenario, false);
             return kvplan::json_text(plan::simulation_json(run.answer), 2);
           },
           "`kvplan simulate --json` text, byte for byte (without the final newline).")
      .def("capacity",
           [](const kp::PyScenario& self, double tolerance, double start) {
             return kp::to_python(plan::capacity_json(kp::run_capacity(self.file.scenario, tolerance, start)));
           },
           py::arg("tolerance") = 0.0, py::arg("start") = 0.0,
           "The largest load meeting the SLO: the dict `kvplan capacity --json` prints.")
      .def("capacity_json",
           [](const kp::PyScenario& self, double tolerance, double start) {
             return kvplan::json_text(plan::capacity_json(kp::run_capacity(self.file.scenario, tolerance, start)), 2);
           },
           py::arg("tolerance") = 0.0, py::arg("start") = 0.0)
      .def("__repr__", [](const kp::PyScenario& self) {
        std::string out = "kvplan.Scenario(";
        bool first = true;
        for (const auto& [flag, value] : plan::non_default_values(self.file.scenario)) {
          std::string keyword = flag;
          std::replace(keyword.begin(), keyword.end(), '-', '_');
          out += (first ? "" : ", ") + keyword + "=" + py::repr(py::str(value)).cast<std::string>();
          first = false;
        }
        return out + ")";
      });

  m.def("load_scenario",
        [](const std::string& path) {
          kp::PyScenario s;
          s.file = plan::load_scenario_file(path);
          const std::string note = plan::migration_note(s.file, path);
          // A UserWarning: Python's default filter shows it once per calling line.
          if (!note.empty() && PyErr_WarnEx(PyExc_UserWarning, note.c_str(), 1) != 0) throw py::error_already_set();
          s.resolve();
          return s;
        },
        py::arg("path"), "A scenario file (version 2; version 1 is migrated).");
  m.def("settings",
        [] {
          py::list out;
          for (const plan::Setting& s : plan::settings()) {
            std::string keyword = s.flag;
            std::replace(keyword.begin(), keyword.end(), '-', '_');
            py::dict d;
            d["keyword"] = keyword;
            d["flag"] = "--" + s.flag;
            d["file_key"] = s.file_key();
            d["type"] = std::string(plan::value_type_name(s.type));
            d["unit"] = s.unit;
            d["default"] = s.default_text;
            d["description"] = s.description;
            d["choices"] = s.choices;
            out.append(d);
          }
          return out;
        },
        "Every setting: keyword, flag, file key, type, unit, default, description, choices.");

  // ---- kvplan.fit_runs (issue 25: `kvplan calibrate from-runs`, plan/runs_fit.h) ----------------
  m.def("fit_runs",
        [](const std::vector<std::string>& paths, const std::string& gpu, const std::string& model,
           const std::string& engine, const std::string& engine_version, int tensor_parallel_size,
           int pipeline_parallel_size, const std::string& log, const std::vector<std::string>& where,
           const std::string& out) {
          const std::vector<kvplan::calibration::ServingRun> runs = kvplan::calibration::read_serving_runs(paths, where);
          plan::RunsDeploymentOptions o;
          o.log = log;
          o.model = model;
          o.gpu = gpu;
          o.engine = engine;
          o.engine_version = engine_version;
          o.tensor_parallel_size = tensor_parallel_size;
          o.pipeline_parallel_size = pipeline_parallel_size;
          const plan::RunsFit fit = plan::fit_runs(runs, plan::resolve_runs_deployment(runs, o));
          nlohmann::json j = plan::runs_fit_json(fit);
          j["profile"] = nullptr;
          if (!out.empty()) {
            kvplan::AtomicFile file(out);
            file.stream() << kvplan::json_text_flat_arrays(plan::runs_profile_json(fit)) << "\n";
            file.commit();
            j["profile"] = out;
          }
          return kp::to_python(j);
        },
        py::arg("paths"), py::kw_only(), py::arg("gpu") = "", py::arg("model") = "", py::arg("engine") = "",
        py::arg("engine_version") = "", py::arg("tensor_parallel_size") = 0, py::arg("pipeline_parallel_size") = 0,
        py::arg("log") = "", py::arg("where") = std::vector<std::string>{}, py::arg("out") = "",
        "Fit kvplan to your deployment's benchmark runs (`kvplan calibrate from-runs`): the dict its --json "
        "prints (runs measured / before / after, shipped and fitted terms, errors), with 'profile' the path of "
        "the 'fitted to your runs' profile written to `out` (None without out); use it as profile=PATH.");
}
