#include "harness/results/document.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <map>

#include "harness/embedded_schemas.hpp"
#include "harness/errors.hpp"
#include "harness/host_info.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/message_text.hpp"
#include "harness/version.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

const Json& results_schema() {
  static const Json schema = Json::parse(embedded_results_schema());
  return schema;
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) return true;
  const auto canonical_a = std::filesystem::weakly_canonical(a, error);
  if (error) return a == b;
  const auto canonical_b = std::filesystem::weakly_canonical(b, error);
  if (error) return a == b;
  return canonical_a == canonical_b;
}

std::string temporary_path(const std::string& path) { return path + ".tmp." + std::to_string(getpid()); }

bool write_all(int descriptor, const std::string& text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t chunk = write(descriptor, text.data() + written, text.size() - written);
    if (chunk < 0 && errno == EINTR) continue;
    if (chunk <= 0) return false;
    written += static_cast<std::size_t>(chunk);
  }
  return true;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  std::error_code error;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
  const std::string temporary = temporary_path(path);
  const int descriptor = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (descriptor < 0) throw FileWriteError(path, std::strerror(errno));
  // Written and flushed to the disk before the rename, so the file that appears
  // under `path` is always whole.
  const bool ok = write_all(descriptor, text) && fsync(descriptor) == 0;
  const int saved_errno = errno;
  close(descriptor);
  if (ok) std::filesystem::rename(temporary, target, error);
  if (!ok || error) {
    std::filesystem::remove(temporary, error);
    throw FileWriteError(path, ok ? error.message() : std::strerror(saved_errno));
  }
}

void remove_stale_temporaries(const std::string& path) {
  const std::filesystem::path target(path);
  const std::filesystem::path directory = target.has_parent_path() ? target.parent_path() : ".";
  const std::string prefix = target.filename().string() + ".tmp.";
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(directory, error)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    const bool gone = pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH);
    std::error_code ignored;
    if (gone) std::filesystem::remove(entry.path(), ignored);
  }
}

void sort_records(Json& records, const Json& scenarios) {
  std::map<std::string, std::size_t> scenario_rank;
  std::map<std::pair<std::string, std::string>, std::size_t> implementation_rank;
  for (const Json& scenario : scenarios) {
    const std::string name = scenario["name"].get<std::string>();
    scenario_rank.try_emplace(name, scenario_rank.size());
    for (const Json& implementation : scenario["implementations"]) {
      implementation_rank.try_emplace({name, implementation.get<std::string>()}, implementation_rank.size());
    }
  }
  const auto rank = [&](const Json& record) {
    const std::string scenario = record["scenario"].get<std::string>();
    const auto s = scenario_rank.find(scenario);
    const auto i = implementation_rank.find({scenario, record["implementation"].get<std::string>()});
    return std::make_tuple(s == scenario_rank.end() ? scenario_rank.size() : s->second,
                           record["case_index"].get<std::size_t>(),
                           i == implementation_rank.end() ? implementation_rank.size() : i->second);
  };
  std::vector<Json> ordered(std::make_move_iterator(records.begin()), std::make_move_iterator(records.end()));
  std::stable_sort(ordered.begin(), ordered.end(), [&](const Json& a, const Json& b) { return rank(a) < rank(b); });
  records = Json::array();
  for (Json& record : ordered) records.push_back(std::move(record));
}
namespace {

// The command line as recorded: arguments are bytes, JSON strings are UTF-8.
Json escaped_arguments(const std::vector<std::string>& command_line) {
  Json arguments = Json::array();
  for (const std::string& argument : command_line) arguments.push_back(escape_invalid_utf8(argument));
  return arguments;
}

}  // namespace

ResultsDocument::ResultsDocument(const std::vector<std::string>& command_line, int threads) {
  const HostInfo host = read_host_info();
  document_ = Json{{"schema", kResultsSchemaId},
                   {"tool", {{"name", "attnbench"},
                             {"version", tool_version()},
                             {"git_revision", git_revision()},
                             {"build_type", build_type()},
                             {"compiler", compiler_id()},
                             {"cuda_built", cuda_built()}}},
                   {"command_line", escaped_arguments(command_line)},
                   {"started_at", utc_timestamp()},
                   {"finished_at", nullptr},
                   {"complete", false},
                   {"host", {{"hostname", host.hostname},
                             {"os", host.os},
                             {"cpu_model", host.cpu_model},
                             {"logical_cpus", host.logical_cpus},
                             {"available_cpus", host.available_cpus.count},
                             {"available_cpus_source", host.available_cpus.source},
                             {"memory_bytes", host.memory_total_bytes}}},
                   {"devices", Json::array()},
                   {"threads", threads},
                   {"shard", nullptr},
                   {"filter", nullptr},
                   {"scenarios", Json::array()},
                   {"records", Json::array()}};
}

Json device_identity(const Json& device) {
  static const char* const kIdentityFields[] = {"kind",         "name",         "compute_capability",
                                                "driver",       "cuda_runtime", "sm_count",
                                                "memory_bytes", "ecc",          "clock_policy"};
  Json identity = Json::object();
  for (const char* field : kIdentityFields) {
    if (device.contains(field)) identity[field] = device[field];
  }
  return identity;
}

Json load_results_file(const std::string& path) {
  std::vector<Diagnostic> diagnostics;
  std::string text;
  if (!read_text_file(path, text, diagnostics)) throw InputError(diagnostics);
  return parse_results_text(text, path);
}

Json parse_results_text(const std::string& text, const std::string& file) {
  std::vector<Diagnostic> diagnostics;
  Json saved = parse_json_document(text, file, diagnostics);
  if (!diagnostics.empty()) throw InputError(diagnostics);
  const bool claims_schema = saved.is_object() && saved.contains("schema") && saved["schema"].is_string() &&
                             saved["schema"].get_ref<const std::string&>() == kResultsSchemaId;
  if (!claims_schema) {
    throw InputError({Diagnostic{file, "schema", std::string("not an attnbench results file (expected schema \"") +
                                                    kResultsSchemaId + "\")"}});
  }
  static const JsonSchema schema(results_schema());
  for (const auto& problem : schema.validate(saved)) diagnostics.push_back({file, problem.path, problem.message});
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return saved;
}

void ResultsDocument::set_started_at(const std::string& started_at) { document_["started_at"] = started_at; }

void ResultsDocument::set_scenarios(const Json& scenarios) { document_["scenarios"] = scenarios; }

void ResultsDocument::set_shard(const std::optional<Shard>& shard) {
  document_["shard"] = shard ? Json{{"index", shard->index}, {"count", shard->count}} : Json(nullptr);
}

void ResultsDocument::set_threads_source(const std::string& source) { document_["threads_source"] = source; }

void ResultsDocument::set_load_average(const std::string& when, const std::optional<std::array<double, 3>>& loads) {
  if (!document_.contains("load_average")) {
    document_["load_average"] = Json{{"run_start", nullptr}, {"run_end", nullptr}};
  }
  Json rounded = nullptr;  // to the 0.01 the kernel reports
  if (loads) {
    rounded = Json::array();
    for (double load : *loads) rounded.push_back(std::round(load * 100) / 100);
  }
  document_["load_average"][when] = rounded;
}

void ResultsDocument::set_filter(const std::string& filter) {
  document_["filter"] = filter.empty() ? Json(nullptr) : Json(filter);
}

void ResultsDocument::set_plugins(const Json& plugins) {
  if (plugins.empty()) {
    document_.erase("plugins");
  } else {
    document_["plugins"] = plugins;
  }
}

namespace {

// A devices entry without the clocks the run adds to it.
Json without_clocks(Json device) {
  if (device.is_object()) device.erase("clocks");
  return device;
}

}  // namespace

void ResultsDocument::add_device(const Json& device) {
  if (!find_device(device)) document_["devices"].push_back(device);
}

const Json* ResultsDocument::find_device(const Json& device) const {
  for (const auto& existing : document_["devices"]) {
    if (without_clocks(existing) == without_clocks(device)) return &existing;
  }
  return nullptr;
}

void ResultsDocument::set_device_clocks(const Json& device, const std::string& when, const Json& clocks) {
  if (clocks.is_null()) return;
  for (auto& existing : document_["devices"]) {
    if (without_clocks(existing) != without_clocks(device)) continue;
    if (when == "run_start" && existing.contains("clocks") && existing["clocks"].contains(when)) return;
    existing["clocks"][when] = clocks;
    return;
  }
}

void ResultsDocument::add_record(Json record) {
  finished_.emplace(record["scenario"].get<std::string>(), record["case_key"].get<std::string>(),
                    record["implementation"].get<std::string>());
  document_["records"].push_back(std::move(record));
}

bool ResultsDocument::has_record(const std::string& scenario, const std::string& case_key,
                                 const std::string& implementation) const {
  return finished_.count({scenario, case_key, implementation}) > 0;
}

void ResultsDocument::mark_complete() {
  document_["complete"] = true;
  document_["finished_at"] = utc_timestamp();
  sort_records(document_["records"], document_["scenarios"]);
}

std::string ResultsDocument::text() const { return document_.dump(1) + "\n"; }

}  // namespace attnbench
