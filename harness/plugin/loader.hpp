// Loading plug-ins: `--plugin PATH` and ATTNBENCH_PLUGINS (docs/plugins.md).
// Each shared library is opened, its ABI version checked before anything else
// is called, its registration run and every implementation it adds checked;
// then its implementations join the registry beside the built-in ones. A
// plug-in with any problem is bad input: an InputError naming the file, and
// nothing of it is registered.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnbench {

// The environment variable naming plug-ins to load, separated by ':' (as PATH).
inline constexpr const char* kPluginsEnvironmentVariable = "ATTNBENCH_PLUGINS";

struct LoadedPlugin {
  std::string path;    // absolute and canonical
  std::string sha256;  // of the file's contents
  std::vector<std::string> implementations;
  std::vector<std::string> versions;  // one per implementation
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

// The `plugins` entry of a results file: the loaded plug-ins that provide
// one of `implementations`.
nlohmann::ordered_json plugins_json(const std::vector<std::string>& implementations);

}  // namespace attnbench
