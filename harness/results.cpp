#include "results.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>

#include "embedded_schemas.hpp"
#include "host_info.hpp"
#include "json_schema.hpp"
#include "json_text.hpp"
#include "message_text.hpp"
#include "version.hpp"

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

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  const std::string temporary = path + ".tmp." + std::to_string(getpid());
  const int descriptor = open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (descriptor < 0) throw std::runtime_error("cannot write " + temporary + ": " + std::strerror(errno));
  // Written and flushed to the disk before the rename, so the file that appears
  // under `path` is always whole.
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t chunk = write(descriptor, text.data() + written, text.size() - written);
    if (chunk < 0) break;
    written += static_cast<std::size_t>(chunk);
  }
  const bool ok = written == text.size() && fsync(descriptor) == 0;
  const int saved_errno = errno;
  close(descriptor);
  std::error_code error;
  if (ok) std::filesystem::rename(temporary, target, error);
  if (!ok || error) {
    std::filesystem::remove(temporary);
    throw std::runtime_error("cannot write " + path + ": " + (ok ? error.message() : std::strerror(saved_errno)));
  }
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
                             {"memory_bytes", host.memory_total_bytes}}},
                   {"devices", Json::array()},
                   {"threads", threads},
                   {"shard", nullptr},
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

ResultsDocument ResultsDocument::resume(const std::string& path, const std::vector<std::string>& command_line,
                                        int threads, const std::vector<Scenario>& scenarios,
                                        const std::optional<Shard>& shard) {
  const Json saved = load_results_file(path);
  std::set<std::string> expected, found;
  for (const auto& scenario : scenarios) expected.insert(scenario.name);
  for (const auto& scenario : saved["scenarios"]) found.insert(scenario.value("name", ""));
  if (expected != found) {
    throw InputError({Diagnostic{path, "scenarios",
                                 "was made from other scenarios; --resume continues a run of the same scenario files"}});
  }

  const Json shard_json = shard ? Json{{"index", shard->index}, {"count", shard->count}} : Json(nullptr);
  if (saved["shard"] != shard_json) {
    throw InputError({Diagnostic{path, "shard", "was made for shard " + saved["shard"].dump() +
                                                    "; --resume continues it with the same --shard"}});
  }

  ResultsDocument document(command_line, threads);
  document.document_["started_at"] = saved["started_at"];
  for (const auto& device : saved["devices"]) document.add_device(device);
  for (const auto& record : saved["records"]) document.add_record(record);
  return document;
}

void ResultsDocument::set_scenarios(const Json& scenarios) { document_["scenarios"] = scenarios; }

void ResultsDocument::set_shard(const std::optional<Shard>& shard) {
  document_["shard"] = shard ? Json{{"index", shard->index}, {"count", shard->count}} : Json(nullptr);
}

namespace {

// A devices entry without the clocks the run adds to it.
Json without_clocks(Json device) {
  if (device.is_object()) device.erase("clocks");
  return device;
}

}  // namespace

void ResultsDocument::add_device(const Json& device) {
  for (const auto& existing : document_["devices"]) {
    if (without_clocks(existing) == without_clocks(device)) return;
  }
  document_["devices"].push_back(device);
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

void ResultsDocument::checkpoint(const std::string& path) {
  document_["complete"] = false;
  write_file_atomically(path, document_.dump(1) + "\n");
}

void ResultsDocument::finish(const std::string& path) {
  document_["complete"] = true;
  document_["finished_at"] = utc_timestamp();
  write_file_atomically(path, document_.dump(1) + "\n");
}

}  // namespace attnbench
