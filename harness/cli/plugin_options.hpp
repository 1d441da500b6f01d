// `--plugin PATH` (repeatable) on every command that runs, lists or checks
// implementations (run, bench, list, info, validate), registered by one call,
// and the loading that follows the parse: ATTNBENCH_PLUGINS first, then the
// flags (harness/plugin/loader.hpp, docs/plugins.md).
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace attnbench {

struct PluginRequest {
  std::vector<CLI::App*> commands;  // those that take --plugin
  std::vector<std::string> paths;   // as given, in order
  // Loads the plug-ins when one of `commands` was chosen; throws InputError.
  void load_if_chosen() const;
};

// Registers --plugin on each of `commands`.
void add_plugin_options(const std::vector<CLI::App*>& commands, PluginRequest& request);

}  // namespace attnbench
