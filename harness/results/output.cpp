#include "harness/results/output.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "harness/errors.hpp"
#include "harness/format.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/message_text.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

namespace {

// Refuses to replace `path` (which exists) without --resume or --overwrite,
// saying what it holds. A file that is not a valid results file is refused
// with its own problems first, each naming the file and key.
[[noreturn]] void refuse_existing_output(const std::string& path) {
  Json document;
  try {
    document = load_results_file(path);
  } catch (const InputError& error) {
    std::vector<Diagnostic> problems = error.diagnostics();
    problems.push_back({"", "", "-o " + path + ": exists and is not a finished results file; it is left as it is: "
                                "--resume continues it if it is an unfinished run, --overwrite replaces it"});
    throw InputError(problems);
  }
  const std::string records = count_of(document["records"].size(), "record");
  if (document["complete"].get<bool>()) {
    const std::string finished = document["finished_at"].is_string()
                                     ? ", finished " + document["finished_at"].get<std::string>()
                                     : std::string();
    throw InputError("-o " + path + ": holds a finished run (" + records + finished +
                     "); --overwrite replaces it, or write to another file");
  }
  throw InputError("-o " + path + ": holds an unfinished run (" + records +
                   "); continue it with --resume, or start again with --overwrite");
}

}  // namespace

ResultsOutput::ResultsOutput(std::string path, ExistingResults existing)
    : path_(std::move(path)), lock_(path_, "-o " + path_), existing_(existing) {
  remove_stale_temporaries(path_);
  const std::string journal = journal_file();
  std::error_code unused;
  const bool have_results = fs::exists(path_, unused);
  const bool have_journal = fs::exists(journal, unused);
  if (existing_ == ExistingResults::refuse) {
    if (have_journal) {
      throw InputError("-o " + path_ + ": holds an unfinished run (its latest records are in " + journal +
                       "); continue it with --resume, or start again with --overwrite");
    }
    if (have_results) refuse_existing_output(path_);
  }
  if (existing_ != ExistingResults::resume) return;
  std::vector<Diagnostic> problems;
  if (have_results) {
    try {
      saved_.document = load_results_file(path_);
    } catch (const InputError& error) {
      problems.insert(problems.end(), error.diagnostics().begin(), error.diagnostics().end());
    }
  }
  if (have_journal) {
    try {
      saved_.journal = read_journal(journal);
    } catch (const InputError& error) {
      problems.insert(problems.end(), error.diagnostics().begin(), error.diagnostics().end());
    }
  }
  if (!problems.empty()) {
    problems.push_back({"", "", "--resume cannot continue " + path_ + "; it is left as it is (--overwrite starts again)"});
    throw InputError(problems);
  }
  if (saved_.journal && saved_.journal->torn_tail) {
    std::fprintf(stderr, "attnbench: note: %s: its last line was cut short (the run was killed while writing it) "
                         "and is ignored; that case runs again\n", journal.c_str());
  }
}

namespace {

// A saved device of a kind this run uses must be the same device.
void check_devices(const Json& saved_devices, const std::vector<Json>& devices_now, const std::string& file,
                   std::vector<Diagnostic>& problems) {
  for (const Json& saved : saved_devices) {
    for (const Json& now : devices_now) {
      if (now["kind"] != saved["kind"]) continue;
      const std::vector<std::string> differences = json_differences(device_identity(saved), device_identity(now));
      if (differences.empty()) continue;
      problems.push_back({file, "devices",
                          "the run measured on another " + saved["kind"].get<std::string>() + " device (the run's vs "
                          "this one's): " + join_differences(differences) + "; records of two devices do not mix"});
    }
  }
}

// The journal's records and devices, checked against the results schema as
// part of a document with this run's header ("records[3]" is record 4).
std::vector<Diagnostic> journal_schema_errors(const JournalContents& journal, const Json& header,
                                              const std::string& file) {
  static const JsonSchema schema(results_schema());
  Json candidate = header;
  candidate["devices"] = Json(journal.devices);
  candidate["records"] = Json(journal.records);
  std::vector<Diagnostic> problems;
  for (const SchemaError& error : schema.validate(candidate)) {
    std::string where = error.path;
    const std::string prefix = "records[";
    const std::size_t close = where.find(']');
    if (where.compare(0, prefix.size(), prefix) == 0 && close != std::string::npos) {
      const std::size_t index = std::stoul(where.substr(prefix.size(), close - prefix.size()));
      where = "record " + std::to_string(index + 1) + where.substr(close + 1);
    }
    problems.push_back({file, where, error.message});
  }
  return problems;
}

}  // namespace

void ResultsOutput::continue_saved_run(ResultsDocument& document, const ExpectedRecords& expected,
                                       const std::vector<Json>& devices_now) {
  if (saved_.journal) {
    const std::vector<Diagnostic> invalid = journal_schema_errors(*saved_.journal, document.json(), journal_file());
    if (!invalid.empty()) throw InputError(invalid);
  }
  const Json identity = run_identity(document.json());
  std::vector<Diagnostic> problems;
  std::vector<LocatedRecord> records;
  std::map<std::tuple<std::string, std::string, std::string>, const Json*> in_results_file;
  const auto key_of = [](const Json& record) {
    return std::make_tuple(record["scenario"].get<std::string>(), record["case_key"].get<std::string>(),
                           record["implementation"].get<std::string>());
  };
  if (saved_.document) {
    const Json& saved = *saved_.document;
    const auto differences = run_identity_differences(run_identity(saved), identity, path_);
    problems.insert(problems.end(), differences.begin(), differences.end());
    check_devices(saved["devices"], devices_now, path_, problems);
    for (std::size_t i = 0; i < saved["records"].size(); ++i) {
      const Json& record = saved["records"][i];
      records.push_back({&record, path_, "records[" + std::to_string(i) + "]"});
      in_results_file.try_emplace(key_of(record), &record);
    }
  }
  std::vector<const Json*> journaled;
  if (saved_.journal) {
    const JournalContents& journal = *saved_.journal;
    const auto differences = run_identity_differences(journal.header["run"], identity, journal_file());
    problems.insert(problems.end(), differences.begin(), differences.end());
    check_devices(Json(journal.devices), devices_now, journal_file(), problems);
    for (std::size_t i = 0; i < journal.records.size(); ++i) {
      const Json& record = journal.records[i];
      // A run killed between writing RESULTS and deleting its journal leaves
      // the journal's records in both: the copy in the journal is dropped.
      const auto same = in_results_file.find(key_of(record));
      if (same != in_results_file.end() && *same->second == record) continue;
      records.push_back({&record, journal_file(), "record " + std::to_string(i + 1)});
      journaled.push_back(&record);
    }
  }
  const auto misplaced = record_problems(records, expected);
  problems.insert(problems.end(), misplaced.begin(), misplaced.end());
  if (!problems.empty()) {
    problems.push_back({"", "", "--resume refused: " + path_ + " is left as it is; continue it with the run that "
                                "made it, or start again with --overwrite"});
    throw InputError(problems);
  }

  if (saved_.document) {
    document.set_started_at((*saved_.document)["started_at"].get<std::string>());
    for (const Json& device : (*saved_.document)["devices"]) document.add_device(device);
    for (const Json& record : (*saved_.document)["records"]) document.add_record(record);
  } else if (saved_.journal) {
    document.set_started_at(saved_.journal->header["started_at"].get<std::string>());
  }
  if (saved_.journal) {
    for (const Json& device : saved_.journal->devices) document.add_device(device);
  }
  for (const Json* record : journaled) document.add_record(*record);
  if (saved_.journal) {
    for (const Json& crash : saved_.journal->crashes) {
      if (!document.has_record(crash["scenario"].get<std::string>(), crash["case_key"].get<std::string>(),
                               crash["implementation"].get<std::string>())) {
        crashes_.push_back(crash);
      }
    }
  }
}

std::unique_ptr<CrashNote> ResultsOutput::note_crashes_in(const std::string& scenario, const std::string& case_key,
                                                          const std::string& implementation) {
  std::lock_guard<std::mutex> guard(mutex_);
  return std::make_unique<CrashNote>(journal_->descriptor(), scenario, case_key, implementation);
}

int ResultsOutput::crashed_in(const std::string& scenario, const std::string& case_key,
                              const std::string& implementation) const {
  for (const Json& crash : crashes_) {
    if (crash["scenario"] == scenario && crash["case_key"] == case_key && crash["implementation"] == implementation) {
      return crash["signal"].get<int>();
    }
  }
  return 0;
}

void ResultsOutput::start(ResultsDocument document) {
  std::lock_guard<std::mutex> guard(mutex_);
  // An overwritten run's journal goes first, so a kill cannot leave it beside
  // the new run's file; a resumed run's stays until RESULTS holds its records.
  if (existing_ == ExistingResults::overwrite) unlink(journal_file().c_str());
  document_.emplace(std::move(document));
  write_results_file();
  journal_.emplace(journal_file(), Json{{"journal", kJournalSchemaId},
                                         {"results_file", escape_invalid_utf8(path_)},
                                         {"started_at", document_->json()["started_at"]},
                                         {"run", run_identity(document_->json())}});
}

void ResultsOutput::note_device(const Json& description, const Json& clocks) {
  std::lock_guard<std::mutex> guard(mutex_);
  document_->add_device(description);
  document_->set_device_clocks(description, "run_start", clocks);
  devices_to_journal_.push_back(*document_->find_device(description));
}

void ResultsOutput::add_case(std::vector<Json> records) {
  std::lock_guard<std::mutex> guard(mutex_);
  std::vector<Json> entries;
  for (const Json& device : devices_to_journal_) entries.push_back(Json{{"device", device}});
  for (const Json& record : records) entries.push_back(Json{{"record", record}});
  journal_->append(entries);
  devices_to_journal_.clear();
  for (Json& record : records) document_->add_record(std::move(record));
}

void ResultsOutput::set_device_clocks(const Json& description, const std::string& when, const Json& clocks) {
  std::lock_guard<std::mutex> guard(mutex_);
  document_->set_device_clocks(description, when, clocks);
}

void ResultsOutput::set_load_average(const std::string& when, const std::optional<std::array<double, 3>>& loads) {
  std::lock_guard<std::mutex> guard(mutex_);
  document_->set_load_average(when, loads);
}

bool ResultsOutput::has_record(const std::string& scenario, const std::string& case_key,
                               const std::string& implementation) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return document_->has_record(scenario, case_key, implementation);
}

void ResultsOutput::write_results_file() { write_file_atomically(path_, document_->text()); }

void ResultsOutput::save() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!document_) return;
  write_results_file();
  if (journal_) journal_->remove();
  journal_.reset();
}

void ResultsOutput::finish() {
  {
    std::lock_guard<std::mutex> guard(mutex_);
    document_->mark_complete();
    write_results_file();
    journal_->remove();
    journal_.reset();
  }
  lock_.release();
}

bool ResultsOutput::save_and_stop() {
  mutex_.lock();  // never unlocked: the process exits after this
  const bool started = document_.has_value();
  try {
    if (started) {
      write_results_file();
      if (journal_) journal_->remove();
      journal_.reset();
    }
  } catch (const FileWriteError&) {
    lock_.release();
    throw;
  }
  lock_.release();
  return started;
}

}  // namespace attnbench
