// Loading plug-ins: `--plugin PATH` and ATTNBENCH_PLUGINS (docs/plugins.md).
// Each shared library is opened, its ABI version checked before anything else
// is called, its registration run and every implementation it adds checked;
// then its implementations join the registry beside the built-in ones. A
// plug-in with any problem is bad input: an InputError naming the file, and
// nothing of it is registered (the implementations it added are released at
// once).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attnbench/plugin.h"

namespace attnbench {

// The environment variable naming plug-ins to load, separated by ':' (as PATH).
inline constexpr const char* kPluginsEnvironmentVariable = "ATTNBENCH_PLUGINS";

struct LoadedPlugin {
  std::string path;    // absolute and canonical
  std::string sha256;  // of the file's contents
  std::vector<std::string> implementations;
  std::vector<std::string> versions;  // one per implementation
  // The implementations' release_user_data hooks with their user_data, until release_plugins() calls them.
  struct Release {
    attnbench_release_fn function = nullptr;
    void* user_data = nullptr;
  };
  std::vector<Release> releases;
  // {"path", "sha256", "implementations": [{"name", "version"}]}
  nlohmann::ordered_json to_json() const;
};

// Loads the plug-ins of ATTNBENCH_PLUGINS, then `paths`; a file named twice
// (the same canonical path) loads once. Throws InputError naming the file.
void load_plugins(const std::vector<std::string>& paths);

// Loads one plug-in (after any loaded earlier). Throws InputError naming `path`.
const LoadedPlugin& load_plugin(const std::string& path);

// Every plug-in loaded so far, in loading order.
const std::vector<LoadedPlugin>& loaded_plugins();

// Calls every loaded implementation's release_user_data once (later calls do
// nothing). cli/main.cpp calls it when the command ends; no plug-in
// implementation may be called after it.
void release_plugins();

// Calls release_plugins() when the scope it is declared in ends, however it
// ends (a return or an exception): declared first in each program's main.
struct ReleasePluginsOnExit {
  ReleasePluginsOnExit() = default;
  ReleasePluginsOnExit(const ReleasePluginsOnExit&) = delete;
  ReleasePluginsOnExit& operator=(const ReleasePluginsOnExit&) = delete;
  ~ReleasePluginsOnExit() { release_plugins(); }
};

// The `plugins` entry of a results file: the loaded plug-ins that provide
// one of `implementations`.
nlohmann::ordered_json plugins_json(const std::vector<std::string>& implementations);

}  // namespace attnbench
