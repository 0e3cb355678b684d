// kvplan — KV-cache capacity planner. `kvplan` alone runs the default scenario (Llama-3.1-8B on
// one H100 SXM with vLLM defaults); subcommands: models, gpus, memory.
#include <iostream>
#include <map>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "kvplan/config.h"
#include "kvplan/core/error.h"

namespace {

constexpr int kBadInput = 2;

void add_memory_flags(CLI::App& cmd, std::map<std::string, std::string>& values,
                      std::map<std::string, CLI::Option*>& options) {
  using kvplan::cli::memory_flag_defaults;
  for (const auto& [name, def] : memory_flag_defaults()) {
    std::string flag = "--" + name;
    if (name == "tensor-parallel-size") flag = "-t,--tensor-parallel-size";
    if (name == "pipeline-parallel-size") flag = "-p,--pipeline-parallel-size";
    std::string help = def.empty() ? std::string() : "default: " + def;
    options[name] = cmd.add_option(flag, values[name], help);
  }
}

kvplan::cli::FlagValues given(const std::map<std::string, std::string>& values,
                              const std::map<std::string, CLI::Option*>& options) {
  kvplan::cli::FlagValues out;
  for (const auto& [name, opt] : options) {
    if (opt->count() > 0) out[name] = values.at(name);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{fmt::format("kvplan {} — how many concurrent users fit on this hardware, with this model "
                           "and KV-cache scheme", KVPLAN_VERSION)};
  app.set_version_flag("--version", std::string(KVPLAN_VERSION) + " (" + KVPLAN_GIT_COMMIT + ")");
  app.require_subcommand(0, 1);

  bool json = false;
  auto* models = app.add_subcommand("models", "List model presets");
  models->add_flag("--json", json, "JSON output");
  auto* gpus = app.add_subcommand("gpus", "List GPU presets (datasheet figures with sources)");
  gpus->add_flag("--json", json, "JSON output");

  auto* memory = app.add_subcommand("memory", "Where every byte of GPU memory goes, and how many requests fit");
  std::map<std::string, std::string> values;
  std::map<std::string, CLI::Option*> options;
  add_memory_flags(*memory, values, options);
  kvplan::cli::MemoryRequest request;
  memory->add_flag("--json", request.json, "JSON output");
  memory->add_option("--compare", request.compare, "KEY=V1,V2,...: side by side, e.g. kv-cache-dtype=auto,fp8,int4");
  memory->add_option("--from-vllm-log", request.from_vllm_log,
                     "A vLLM start-up log: predict its printed figures and compare term by term");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return kBadInput;
  }

  try {
    if (models->parsed()) return kvplan::cli::run_models(json);
    if (gpus->parsed()) return kvplan::cli::run_gpus(json);
    if (memory->parsed()) {
      request.flags = given(values, options);
      return kvplan::cli::run_memory(request);
    }
    // No subcommand: the default scenario.
    std::cout << "kvplan default scenario: Llama-3.1-8B on one H100 SXM, vLLM defaults "
                 "(run `kvplan --help` for more)\n\n";
    kvplan::cli::MemoryRequest defaults;
    defaults.flags["lengths"] = "lognormal:6.9,1.0";
    return kvplan::cli::run_memory(defaults);
  } catch (const kvplan::ConfigError& e) {
    std::cerr << "kvplan: " << e.what() << "\n";
    return kBadInput;
  }
}
