// The results file (docs/design.md §7, docs/results.md): one versioned JSON document per run, validated
// by scenarios/results.schema.json, written atomically (temporary file, then
// rename) after every case so a crash loses no finished case and --resume can
// continue the run.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "scenario.hpp"
#include "shard.hpp"

namespace attnbench {

inline constexpr const char* kResultsSchemaId = "attnbench.results/1";

// The JSON Schema of results files (embedded at build time).
const nlohmann::ordered_json& results_schema();

std::string utc_timestamp();  // "2026-11-29T22:38:52Z"

// The fields of a `devices` entry that identify the hardware and software a run
// measured (kind, name and, where present, compute capability, driver, CUDA
// runtime, SM count, memory, ECC, and the clock policy: "default" or the
// locked SM/memory clocks). Other fields (clocks seen, free memory, CPU
// counts, cache sizes) may change between runs of one machine. `compare` and
// `merge` treat two devices as the same when these agree.
nlohmann::ordered_json device_identity(const nlohmann::ordered_json& device);

// Reads a results file and checks it against the results schema; throws
// InputError naming the file and every problem when it is not a valid one.
nlohmann::ordered_json load_results_file(const std::string& path);

// Whether two paths name the same file, existing or not ("a.json" and
// "./a.json"); outputs are checked against inputs with it before any write.
bool same_file(const std::string& a, const std::string& b);

// Writes `text` to `path` through a temporary file in the same directory and a
// rename, so readers never see a half-written file.
void write_file_atomically(const std::string& path, const std::string& text);

class ResultsDocument {
 public:
  ResultsDocument(const std::vector<std::string>& command_line, int threads);

  // Continues the run saved in `path`: keeps its records and start time.
  // Throws InputError when the file is not a results file of this tool or was made
  // from other scenarios.
  static ResultsDocument resume(const std::string& path, const std::vector<std::string>& command_line,
                                int threads, const std::vector<Scenario>& scenarios,
                                const std::optional<Shard>& shard);

  void set_scenarios(const nlohmann::ordered_json& scenarios);
  void set_shard(const std::optional<Shard>& shard);
  void add_device(const nlohmann::ordered_json& device);
  // Sets clocks[`when`] ("run_start" once, "run_end") of the devices entry that
  // `device` describes (its other fields equal); null clocks are not recorded.
  void set_device_clocks(const nlohmann::ordered_json& device, const std::string& when,
                         const nlohmann::ordered_json& clocks);
  void add_record(nlohmann::ordered_json record);
  bool has_record(const std::string& scenario, const std::string& case_key,
                  const std::string& implementation) const;
  const nlohmann::ordered_json& json() const { return document_; }

  void checkpoint(const std::string& path);            // complete = false
  void finish(const std::string& path);                // complete = true, finished_at set

 private:
  nlohmann::ordered_json document_;
  std::set<std::tuple<std::string, std::string, std::string>> finished_;
};

}  // namespace attnbench
