#include "harness/results/document.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <map>
#include <ostream>
#include <random>
#include <streambuf>

#include "harness/common/measure_settings.hpp"
#include "harness/embedded_schemas.hpp"
#include "harness/errors.hpp"
#include "harness/host_info.hpp"
#include "harness/implementation.hpp"
#include "harness/results/file_lock.hpp"
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

nlohmann::ordered_json with_default_timing(nlohmann::ordered_json measure) {
  if (!measure.is_object()) return measure;
  const MeasureSettings defaults;
  if (!measure.contains("timing")) measure["timing"] = nlohmann::ordered_json::array({"events"});
  if (!measure.contains("graph_calls")) measure["graph_calls"] = defaults.graph_calls;
  if (!measure.contains("clock_mark_share")) measure["clock_mark_share"] = defaults.clock_mark_share;
  return measure;
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string new_run_id() {
  std::random_device source;
  std::string id;
  constexpr char kDigits[] = "0123456789abcdef";
  while (id.size() < 32) {
    for (std::uint32_t word = source(), i = 0; i < 8; ++i, word >>= 4) id += kDigits[word & 15];
  }
  return id;
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

bool write_all(int descriptor, std::string_view text) {
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t chunk = write(descriptor, text.data() + written, text.size() - written);
    if (chunk < 0 && errno == EINTR) continue;
    if (chunk <= 0) return false;
    written += static_cast<std::size_t>(chunk);
  }
  return true;
}

namespace {

// An output stream's buffer that writes to a descriptor 1 MiB at a time and
// remembers the first error (its errno).
class DescriptorBuffer : public std::streambuf {
 public:
  explicit DescriptorBuffer(int descriptor) : descriptor_(descriptor), buffer_(std::size_t{1} << 20) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  // Writes what is buffered; false, with errno set, when a write failed.
  bool flushed() {
    if (!failed_ && pptr() > pbase() && !write_all(descriptor_, std::string_view(pbase(), pptr() - pbase()))) {
      failed_ = true;
      error_ = errno;
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    errno = error_;
    return !failed_;
  }

 protected:
  int_type overflow(int_type c) override {
    if (!flushed()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return flushed() ? 0 : -1; }

 private:
  int descriptor_;
  std::vector<char> buffer_;
  bool failed_ = false;
  int error_ = 0;
};

}  // namespace

bool sync_directory(int directory) { return fsync(directory) == 0 || errno == EINVAL; }

int replace_file_in(int directory, const std::string& name, const std::string& temporary_name,
                    const std::function<bool(int)>& write, const std::string& shown_path, bool keep_open) {
  // O_NOFOLLOW: a symbolic link planted at the temporary name is refused, its target untouched.
  const int flags = O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | (keep_open ? O_RDWR | O_APPEND : O_WRONLY);
  const int descriptor = openat(directory, temporary_name.c_str(), flags, 0644);
  if (descriptor < 0) {
    throw FileWriteError(shown_path, errno == ELOOP ? "the temporary file " + temporary_name +
                                                          " is a symbolic link, which attnbench does not follow"
                                                    : std::string(std::strerror(errno)));
  }
  // Written and flushed to the disk before the rename, so the file that appears
  // under `name` is always whole; the directory is synced after it, so the
  // rename itself survives a power loss.
  bool ok = write(descriptor) && fsync(descriptor) == 0 &&
            renameat(directory, temporary_name.c_str(), directory, name.c_str()) == 0;
  const int saved_errno = errno;
  if (!ok) {
    close(descriptor);
    unlinkat(directory, temporary_name.c_str(), 0);
    throw FileWriteError(shown_path, std::strerror(saved_errno));
  }
  if (!sync_directory(directory)) {
    const int error = errno;
    close(descriptor);
    throw FileWriteError(shown_path, std::string("the directory could not be synced: ") + std::strerror(error));
  }
  if (keep_open) return descriptor;
  close(descriptor);
  return -1;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::filesystem::path target(path);
  std::error_code error;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
  const std::string directory_name = target.has_parent_path() ? target.parent_path().string() : ".";
  const int directory = open(directory_name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (directory < 0) throw FileWriteError(path, std::strerror(errno));
  try {
    const std::string name = target.filename().string();
    replace_file_in(directory, name, temporary_path(name),
                    [&](int descriptor) { return write_all(descriptor, text); }, path, false);
  } catch (...) {
    close(directory);
    throw;
  }
  close(directory);
}

void write_file_atomically(const FileLock& lock, const Json& document) {
  lock.check_in_place();
  const std::string name = lock.target_name();
  const auto write = [&](int descriptor) {
    DescriptorBuffer buffer(descriptor);
    std::ostream out(&buffer);
    out << std::setw(1) << document << '\n';
    return buffer.flushed();
  };
  replace_file_in(lock.directory(), name, temporary_path(name), write, lock.target(), false);
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
                   {"run_id", new_run_id()},
                   {"started_at", utc_timestamp()},
                   {"finished_at", nullptr},
                   {"complete", false},
                   {"host", host.to_json(HostInfo::JsonFields::results_file)},
                   {"devices", Json::array()},
                   {"threads", threads},
                   {"shard", nullptr},
                   {"filter", nullptr},
                   {"scenarios", Json::array()},
                   {"records", Json::array()}};
}

bool is_oracle_record(const Json& record) {
  const Implementation* implementation =
      ImplementationRegistry::instance().find(record["implementation"].get<std::string>());
  if (implementation && implementation->is_oracle()) return true;
  return record["accuracy"].is_object() && record["accuracy"]["status"] == "oracle";
}

Json device_identity(const Json& device) {
  static const char* const kIdentityFields[] = {"kind",         "name",         "compute_capability",
                                                "driver",       "cuda_runtime", "sm_count",
                                                "memory_bytes", "ecc",          "clock_policy"};
  Json identity = Json::object();
  for (const char* field : kIdentityFields) {
    if (device.contains(field)) identity[field] = device[field];
  }
  // Files from before --lock-clocks ran their GPUs as they came.
  if (!identity.contains("clock_policy")) identity["clock_policy"] = "default";
  return identity;
}

namespace {

// A parsed document that must be a results file.
Json checked_results_document(Json saved, const std::string& file) {
  std::vector<Diagnostic> diagnostics;
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

}  // namespace

Json load_results_file(const std::string& path) {
  std::vector<Diagnostic> diagnostics;
  Json saved = parse_json_file(path, kResultsFileBound, diagnostics);
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return checked_results_document(std::move(saved), path);
}

Json parse_results_text(const std::string& text, const std::string& file) {
  std::vector<Diagnostic> diagnostics;
  Json saved = parse_json_document(text, file, diagnostics);
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return checked_results_document(std::move(saved), file);
}

void ResultsDocument::set_started_at(const std::string& started_at) { document_["started_at"] = started_at; }

void ResultsDocument::set_run_id(const std::string& run_id) { document_["run_id"] = run_id; }

void ResultsDocument::set_scenarios(const Json& scenarios) { document_["scenarios"] = scenarios; }

void ResultsDocument::set_shard(const std::optional<Shard>& shard) {
  document_["shard"] = shard ? Json{{"index", shard->index}, {"count", shard->count}} : Json(nullptr);
}

void ResultsDocument::set_threads_source(const std::string& source) { document_["threads_source"] = source; }

void ResultsDocument::set_host_calibration(const Json& calibration) { document_["host"]["calibration"] = calibration; }

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

void ResultsDocument::set_blas(const Json& blas) { document_["tool"]["blas"] = blas; }

void ResultsDocument::set_machine(const Json& findings) {
  document_["machine"] = Json{{"checked_at", utc_timestamp()}, {"findings", findings}};
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
// A device's description less what the run measures of it (its clocks, what
// the kernel timer costs), which may differ between the runs of one file.
Json without_clocks(Json device) {
  if (device.is_object()) {
    device.erase("clocks");
    device.erase("kernel_timer_cost");
  }
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

}  // namespace attnbench
