#include "harness/plugin/loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <utility>

#include "attnbench/plugin.h"
#include "harness/errors.hpp"
#include "harness/implementation.hpp"
#include "harness/message_text.hpp"
#include "harness/plugin/abi.hpp"
#include "harness/plugin/plugin_implementation.hpp"
#include "harness/plugin/sha256.hpp"
#include "harness/user_paths.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

std::vector<LoadedPlugin>& plugins() {
  static std::vector<LoadedPlugin> loaded;
  return loaded;
}

// The plug-in that registered `name`, or nullptr.
const LoadedPlugin* plugin_providing(const std::string& name) {
  for (const LoadedPlugin& plugin : plugins()) {
    if (std::find(plugin.implementations.begin(), plugin.implementations.end(), name) != plugin.implementations.end()) {
      return &plugin;
    }
  }
  return nullptr;
}

bool has_elf_header(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  file.read(magic, sizeof magic);
  return file.gcount() == 4 && std::memcmp(magic, "\x7f" "ELF", 4) == 0;
}

// The sizes of an attnbench_implementation a plug-in built against each minor
// revision gives: the harness reads no field past the given size.
constexpr std::size_t kImplementationSize_1_0 = offsetof(attnbench_implementation, release_user_data);
constexpr std::size_t kImplementationSize_1_1 = sizeof(attnbench_implementation);

// Calls each accepted implementation's release_user_data once.
void release_user_data(std::vector<PluginDescriptor>& descriptors) {
  for (PluginDescriptor& descriptor : descriptors) {
    if (descriptor.release_user_data) std::exchange(descriptor.release_user_data, nullptr)(descriptor.user_data);
  }
}

// What one registration collects: the descriptors `add` accepted, and every
// problem with what it refused.
struct Registration {
  std::string file;
  std::vector<PluginDescriptor> accepted;
  std::vector<Diagnostic> problems;

  void refuse(const std::string& where, const std::string& message) { problems.push_back({file, where, message}); }

  bool add(const attnbench_implementation* given) {
    const std::size_t before = problems.size();
    if (!given) {
      refuse("", "add() was given a null attnbench_implementation");
      return false;
    }
    if (given->struct_size < kImplementationSize_1_0) {
      refuse("", "an attnbench_implementation has struct_size " + std::to_string(given->struct_size) +
                     "; this ABI's is at least " + std::to_string(kImplementationSize_1_0) +
                     " bytes (set it to sizeof(attnbench_implementation))");
      return false;
    }
    const std::string name = given->name ? given->name : "";
    const std::string where = name.empty() ? "implementation " + std::to_string(accepted.size() + 1) : quote(name);
    if (name.empty()) refuse(where, "has no name");
    if (const std::string problem = implementation_name_problem(name, given->device); !name.empty() && !problem.empty()) {
      refuse(where, problem);
    }
    if (given->algorithm != ATTNBENCH_ALGORITHM_FUSED && given->algorithm != ATTNBENCH_ALGORITHM_MATERIALIZING) {
      refuse(where, "algorithm " + std::to_string(given->algorithm) +
                        " is none of ATTNBENCH_ALGORITHM_FUSED (1) and ATTNBENCH_ALGORITHM_MATERIALIZING (2)");
    }
    if (given->output_dtype != ATTNBENCH_OUTPUT_INPUT_DTYPE && given->output_dtype != ATTNBENCH_DTYPE_FP32) {
      refuse(where, "output_dtype " + std::to_string(given->output_dtype) +
                        " is none of ATTNBENCH_OUTPUT_INPUT_DTYPE (0) and ATTNBENCH_DTYPE_FP32 (3)");
    }
    if (!given->version || !given->version[0]) {
      refuse(where, "has no version (it is recorded with every record, beside the library's SHA-256)");
    }
    if (!given->supports) refuse(where, "has no supports() callback");
    if (!given->forward) refuse(where, "has no forward() callback");
    if (!name.empty()) {
      if (ImplementationRegistry::instance().find(name)) {
        const LoadedPlugin* owner = plugin_providing(name);
        refuse(where, "is already the name of " +
                          (owner ? "an implementation of the plug-in " + owner->path
                                 : std::string("a built-in implementation")) +
                          "; give this one another name");
      }
      for (const PluginDescriptor& earlier : accepted) {
        if (earlier.name == name) refuse(where, "is registered twice by this plug-in");
      }
    }
    if (problems.size() != before) return false;
    PluginDescriptor descriptor;
    descriptor.name = name;
    descriptor.summary = given->summary ? given->summary : "";
    descriptor.version = given->version;
    descriptor.accuracy_baseline = given->accuracy_baseline ? given->accuracy_baseline : "";
    descriptor.configuration = given->configuration ? given->configuration : "";
    descriptor.device = given->device;
    descriptor.algorithm = given->algorithm;
    descriptor.output_dtype = given->output_dtype;
    descriptor.user_data = given->user_data;
    descriptor.supports = given->supports;
    descriptor.workspace_bytes = given->workspace_bytes;
    descriptor.forward = given->forward;
    descriptor.backward = given->backward;
    if (given->struct_size >= kImplementationSize_1_1) descriptor.release_user_data = given->release_user_data;
    accepted.push_back(std::move(descriptor));
    return true;
  }
};

std::int32_t registrar_add(attnbench_registrar* registrar, const attnbench_implementation* implementation) {
  auto* registration = static_cast<Registration*>(registrar->harness);
  return registration->add(implementation) ? ATTNBENCH_STATUS_OK : ATTNBENCH_STATUS_ERROR;
}

// dlopen's handle, closed unless the plug-in's implementations were registered.
struct LibraryHandle {
  void* handle = nullptr;
  ~LibraryHandle() {
    if (handle) dlclose(handle);
  }
  void keep() { handle = nullptr; }
};

}  // namespace

Json LoadedPlugin::to_json() const {
  Json entries = Json::array();
  for (std::size_t i = 0; i < implementations.size(); ++i) {
    entries.push_back(Json{{"name", implementations[i]}, {"version", versions[i]}});
  }
  return Json{{"path", escape_invalid_utf8(path)}, {"sha256", sha256}, {"implementations", entries}};
}

const LoadedPlugin& load_plugin(const std::string& given) {
  const auto fail = [&](const std::string& message) -> InputError {
    return InputError({Diagnostic{given, "", message}});
  };
  if (const std::string problem = path_name_problem(given); !problem.empty()) throw fail("--plugin: " + problem);
  std::error_code error;
  const fs::file_status status = fs::status(given, error);
  if (!fs::exists(status)) throw fail("no such file (a plug-in is a shared library: --plugin PATH or " +
                                      std::string(kPluginsEnvironmentVariable) + ")");
  if (!fs::is_regular_file(status)) throw fail("is not a regular file (a plug-in is a shared library)");
  const std::string path = fs::canonical(given, error).string();
  for (const LoadedPlugin& plugin : plugins()) {
    if (plugin.path == path) return plugin;
  }
  std::string read_error;
  const std::optional<std::string> sha256 = sha256_file_hex(path, read_error);
  if (!sha256) throw fail("cannot be read: " + read_error);
  if (!has_elf_header(path)) throw fail("is not a shared library (no ELF header); build the plug-in with -shared");

  dlerror();
  LibraryHandle library{dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)};
  if (!library.handle) {
    const char* reason = dlerror();
    throw fail(std::string("cannot be loaded as a shared library: ") + (reason ? reason : "unknown reason"));
  }
  const auto version =
      reinterpret_cast<attnbench_plugin_abi_version_fn>(dlsym(library.handle, ATTNBENCH_PLUGIN_ABI_VERSION_SYMBOL));
  if (!version) {
    throw fail("exports no attnbench_plugin_abi_version(): not an attnbench plug-in (write "
               "ATTNBENCH_PLUGIN_DEFINE_ABI_VERSION once in its source)");
  }
  const std::uint32_t abi_version = version();
  if (abi_version != ATTNBENCH_PLUGIN_ABI_VERSION) {
    throw fail("was built for plug-in ABI version " + std::to_string(abi_version) + "; this attnbench loads version " +
               std::to_string(ATTNBENCH_PLUGIN_ABI_VERSION) +
               ": rebuild it against this attnbench's include/attnbench/plugin.h");
  }
  const auto register_function =
      reinterpret_cast<attnbench_plugin_register_fn>(dlsym(library.handle, ATTNBENCH_PLUGIN_REGISTER_SYMBOL));
  if (!register_function) throw fail("exports no attnbench_plugin_register(attnbench_registrar*, attnbench_message*)");

  Registration registration{given, {}, {}};
  attnbench_registrar registrar{sizeof(attnbench_registrar), ATTNBENCH_PLUGIN_ABI_VERSION, &registration,
                                registrar_add, ATTNBENCH_PLUGIN_ABI_MINOR_VERSION};
  char text[1024] = "";
  attnbench_message message{text, sizeof text};
  const std::int32_t result = register_function(&registrar, &message);
  if (result != ATTNBENCH_STATUS_OK && registration.problems.empty()) {
    registration.refuse("", "attnbench_plugin_register() failed: " + std::string(text[0] ? text : "(no message)"));
  }
  if (registration.problems.empty() && registration.accepted.empty()) {
    registration.refuse("", "attnbench_plugin_register() added no implementation (call registrar->add)");
  }
  if (!registration.problems.empty()) {
    release_user_data(registration.accepted);
    throw InputError(registration.problems);
  }

  LoadedPlugin loaded{path, *sha256, {}, {}, {}};
  for (PluginDescriptor& descriptor : registration.accepted) {
    loaded.implementations.push_back(descriptor.name);
    loaded.versions.push_back(descriptor.version);
    loaded.releases.push_back({descriptor.release_user_data, descriptor.user_data});
    ImplementationRegistry::instance().add(
        std::make_unique<PluginImplementation>(PluginOrigin{path, *sha256}, std::move(descriptor)));
  }
  library.keep();  // its implementations call into it from now on
  plugins().push_back(std::move(loaded));
  return plugins().back();
}

void load_plugins(const std::vector<std::string>& paths) {
  std::vector<std::string> all;
  if (const char* listed = std::getenv(kPluginsEnvironmentVariable)) {
    const std::string list = listed;
    for (std::size_t start = 0; start <= list.size();) {
      const std::size_t end = std::min(list.find(':', start), list.size());
      if (end > start) all.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  all.insert(all.end(), paths.begin(), paths.end());
  std::vector<Diagnostic> problems;
  for (const std::string& path : all) {
    try {
      load_plugin(path);
    } catch (const InputError& error) {
      problems.insert(problems.end(), error.diagnostics().begin(), error.diagnostics().end());
    }
  }
  if (!problems.empty()) throw InputError(problems);
}

const std::vector<LoadedPlugin>& loaded_plugins() { return plugins(); }

void release_plugins() {
  for (LoadedPlugin& plugin : plugins()) {
    for (LoadedPlugin::Release& release : plugin.releases) {
      if (release.function) std::exchange(release.function, nullptr)(release.user_data);
    }
  }
}

Json plugins_json(const std::vector<std::string>& implementations) {
  Json entries = Json::array();
  for (const LoadedPlugin& plugin : plugins()) {
    const bool used = std::any_of(plugin.implementations.begin(), plugin.implementations.end(), [&](const auto& name) {
      return std::find(implementations.begin(), implementations.end(), name) != implementations.end();
    });
    if (used) entries.push_back(plugin.to_json());
  }
  return entries;
}

}  // namespace attnbench
