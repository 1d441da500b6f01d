// `attnbench info`: the tool, the host, the devices and the implementations.
#include <algorithm>
#include <cstdio>
#include <memory>

#include "harness/backend.hpp"
#include "harness/blas.hpp"
#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/format.hpp"
#include "harness/host_info.hpp"
#include "harness/implementation.hpp"
#include "harness/common/device_profiler.hpp"
#include "harness/plugin/loader.hpp"
#include "harness/version.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// "  <label padded to width>  <text>", the text wrapped to 80 columns and its
// further lines aligned under its first.
void print_entry(const std::string& label, std::size_t width, const std::string& text) {
  const std::string indent(2 + width + (width ? 2 : 0), ' ');
  const std::vector<std::string> lines = wrap_words(text, 80, indent);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string line = lines[i];
    if (i == 0) line.replace(2, label.size(), label);
    std::printf("%s\n", line.c_str());
  }
}

int command_info(bool as_json) {
  const HostInfo host = read_host_info();
  Json info{{"tool", {{"version", tool_version()},
                      {"git_revision", git_revision()},
                      {"build_type", build_type()},
                      {"compiler", compiler_id()},
                      {"cuda_built", cuda_built()},
                      {"blas", blas::library_json()}}},
            {"host", host.to_json(HostInfo::JsonFields::info)},
            {"devices", Json::array()},
            {"implementations", Json::array()}};
  for (const auto& device : BackendRegistry::instance().devices()) {
    Backend* backend = BackendRegistry::instance().get(device);
    const Verdict available = backend->availability();
    Json entry{{"device", device}, {"available", available.ok}};
    if (available.ok) entry["description"] = backend->describe();
    else entry["reason"] = available.reason;
    if (DeviceProfiler* profiler = backend->profiler()) {
      entry["profiler"] = profiler->probe().to_json();
      if (!info.contains("profiler")) info["profiler"] = entry["profiler"];
    }
    info["devices"].push_back(entry);
  }
  if (!info.contains("profiler")) {
    info["profiler"] = ProfilerProbe{false, "no device backend with a hardware-counter profiler in this build", "",
                                     Json::object()}
                           .to_json();
  }
  for (Implementation* implementation : ImplementationRegistry::instance().all()) {
    const Verdict available = implementation->availability();
    Json entry{{"name", implementation->name()},
               {"device", implementation->device()},
               {"summary", implementation->summary()},
               {"available", available.ok}};
    if (!available.ok) entry["reason"] = available.reason;
    if (Json plugin = implementation->plugin_identity(); !plugin.is_null()) entry["plugin"] = std::move(plugin);
    info["implementations"].push_back(entry);
  }
  info["plugins"] = Json::array();
  for (const LoadedPlugin& plugin : loaded_plugins()) info["plugins"].push_back(plugin.to_json());
  if (as_json) {
    std::printf("%s\n", info.dump(2).c_str());
    return kExitSuccess;
  }
  std::printf("attnbench %s (git %s, %s, %s, CUDA %s)\n", tool_version(), git_revision(), build_type(),
              compiler_id(), cuda_built() ? "built" : "not built");
  const blas::Library& library = blas::library();
  std::printf("BLAS: %s (%s kernels, %s threads)\n", library.identity().c_str(), library.core.c_str(),
              library.threading.c_str());
  std::printf("host: %s, %s, %s, %d logical CPUs\n", host.hostname.c_str(), host.os.c_str(), host.cpu_model.c_str(),
              host.logical_cpus);
  std::printf("  %d CPUs available (%s); last-level cache %s (level %d, %s)\n", host.available_cpus.count,
              host.available_cpus.source.c_str(), format_bytes(static_cast<double>(host.last_level_cache.bytes)).c_str(),
              host.last_level_cache.level, host.last_level_cache.source.c_str());
  std::size_t device_width = 0, name_width = 0;
  for (const Json& device : info["devices"]) {
    device_width = std::max(device_width, device["device"].get<std::string>().size());
  }
  for (const Json& entry : info["implementations"]) {
    name_width = std::max(name_width, entry["name"].get<std::string>().size());
  }
  std::printf("\ndevices:\n");
  for (const Json& device : info["devices"]) {
    print_entry(device["device"].get<std::string>(), device_width,
                device["available"].get<bool>() ? device["description"]["name"].get<std::string>()
                                                : "unavailable: " + device["reason"].get<std::string>());
  }
  const Json& profiler = info["profiler"];
  std::printf("\nprofiler (HBM bytes, run's profiling pass):\n");
  print_entry("", 0,
              profiler["available"].get<bool>()
                  ? "available" + (profiler.contains("chip") ? " (" + profiler["chip"].get<std::string>() + ")" : "")
                  : "unavailable: " + profiler["reason"].get<std::string>());
  if (!profiler["hint"].get<std::string>().empty()) print_entry("", 0, "hint: " + profiler["hint"].get<std::string>());
  if (!info["plugins"].empty()) {
    std::printf("\nplug-ins:\n");
    for (const Json& plugin : info["plugins"]) {
      print_entry("", 0, plugin["path"].get<std::string>() + " (sha256 " + plugin["sha256"].get<std::string>() + ")");
    }
  }
  std::printf("\nimplementations:\n");
  for (const Json& entry : info["implementations"]) {
    std::string text = entry["summary"].get<std::string>();
    if (!entry["available"].get<bool>()) text += " [unavailable: " + entry["reason"].get<std::string>() + "]";
    print_entry(entry["name"].get<std::string>(), name_width, text);
  }
  return kExitSuccess;
}

}  // namespace

Subcommand add_info_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* command = app.add_subcommand("info", "Devices, versions and implementations on this machine");
  command->add_flag("--json", *json, "Machine-readable output");
  return {command, [json](const std::vector<std::string>&) { return command_info(*json); }};
}

}  // namespace attnbench
