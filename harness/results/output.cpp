#include "harness/results/output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
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
                                "--resume continues it if it is an unfinished run, --overwrite replaces it and "
                                "discards what it holds"});
    throw InputError(problems);
  }
  const std::string records = count_of(document["records"].size(), "record");
  if (document["complete"].get<bool>()) {
    const std::string finished = document["finished_at"].is_string()
                                     ? ", finished " + document["finished_at"].get<std::string>()
                                     : std::string();
    throw InputError("-o " + path + ": holds a finished run (" + records + finished +
                     "); --overwrite discards it and starts again, or write to another file");
  }
  throw InputError("-o " + path + ": holds an unfinished run (" + records +
                   "); continue it with --resume, or discard them and start again with --overwrite");
}

// Where a displaced run's rescue file may go, in order: $TMPDIR (when set),
// /tmp, the current directory.
std::vector<fs::path> rescue_directories() {
  std::vector<fs::path> directories;
  if (const char* temporary = std::getenv("TMPDIR"); temporary && *temporary) directories.emplace_back(temporary);
  directories.emplace_back("/tmp");
  std::error_code error;
  if (fs::path here = fs::current_path(error); !error) directories.push_back(here);
  return directories;
}

}  // namespace

ResultsOutput::ResultsOutput(std::string path, ExistingResults existing)
    : path_(std::move(path)), lock_(path_, "-o " + path_), existing_(existing) {
  remove_stale_temporaries(path_);
  const std::string journal = journal_file();
  lock_.refuse_symbolic_link(journal_path(lock_.target_name()), "-o " + path_);
  std::error_code unused;
  const bool have_results = fs::exists(path_, unused);
  const bool have_journal = fs::exists(journal, unused);
  if (existing_ == ExistingResults::refuse) {
    if (have_journal) {
      throw InputError("-o " + path_ + ": holds an unfinished run (its latest records are in " + journal +
                       "); continue it with --resume, or discard its records and start again with --overwrite");
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
    problems.push_back({"", "", "--resume cannot continue " + path_ + "; it and its journal are left as they are: "
                                "repair or move aside what is named above (a journal moved aside takes its records "
                                "with it); --overwrite would discard every record they hold and start again"});
    throw InputError(problems);
  }
  if (saved_.journal && saved_.journal->header.is_null()) {
    // Only a build that wrote the header in place could leave this (the
    // header now appears by a rename): it holds no record.
    std::fprintf(stderr, "attnbench: note: %s holds no whole line (a run was killed while creating it), so no "
                         "record; it is replaced\n", journal.c_str());
    saved_.journal.reset();
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
// part of a document with this run's header ("records[3]" is record 4). They
// are moved into that document for the check and back out of it after.
std::vector<Diagnostic> journal_schema_errors(JournalContents& journal, const Json& header, const std::string& file) {
  static const JsonSchema schema(results_schema());
  Json candidate = header;
  candidate["devices"] = Json::array();
  candidate["records"] = Json::array();
  for (const auto& [entries, key] : {std::pair{&journal.devices, "devices"}, std::pair{&journal.records, "records"}}) {
    for (Json& entry : *entries) candidate[key].push_back(std::move(entry));
  }
  const std::vector<SchemaError> errors = schema.validate(candidate);
  for (const auto& [entries, key] : {std::pair{&journal.devices, "devices"}, std::pair{&journal.records, "records"}}) {
    for (std::size_t i = 0; i < entries->size(); ++i) (*entries)[i] = std::move(candidate[key][i]);
  }
  std::vector<Diagnostic> problems;
  for (const SchemaError& error : errors) {
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

ResumedRecords ResultsOutput::continue_saved_run(ResultsDocument& document, const ExpectedRecords& expected,
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
  std::size_t saved_records = 0;
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
    saved_records += saved["records"].size();
  }
  std::vector<std::size_t> journaled;  // the journal's records that are not in RESULTS already
  if (saved_.journal) {
    const JournalContents& journal = *saved_.journal;
    if (saved_.document) {
      const Json& saved = *saved_.document;
      const Json file_id = saved.contains("run_id") ? saved["run_id"] : Json("none");
      if (file_id != journal.header["run_id"]) {
        problems.push_back({journal_file(), "run_id",
                            "is the journal of another run (run " + journal.header["run_id"].get<std::string>() +
                                ", started " + journal.header["started_at"].get<std::string>() + ") than " + path_ +
                                " (run " + file_id.get<std::string>() + ", started " +
                                saved["started_at"].get<std::string>() +
                                "): its records are not this run's. Move it aside to continue " + path_ +
                                " without them"});
      }
    }
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
      journaled.push_back(i);
    }
    saved_records += journal.records.size();
  }
  const RecordRuns runs = record_runs_of(
      saved_.document ? *saved_.document : Json{{"run_id", saved_.journal ? saved_.journal->header["run_id"] : Json()}},
      true);
  const auto misplaced = record_problems(records, expected, runs);
  problems.insert(problems.end(), misplaced.begin(), misplaced.end());
  if (!problems.empty()) {
    problems.push_back({"", "", "--resume refused: " + path_ + " is left as it is; continue it with the run that "
                                "made it, or start again with --overwrite, which discards the " +
                                count_of(saved_records, "record") + " saved in it and its journal"});
    throw InputError(problems);
  }

  // The saved records move into the document: a large run is not held twice.
  ResumedRecords resumed;
  if (saved_.document) {
    Json& saved = *saved_.document;
    document.set_started_at(saved["started_at"].get<std::string>());
    if (saved.contains("run_id")) document.set_run_id(saved["run_id"].get<std::string>());
    for (const Json& device : saved["devices"]) document.add_device(device);
    for (Json& record : saved["records"]) document.add_record(std::move(record));
    resumed.from_results_file = saved["records"].size();
  } else if (saved_.journal) {
    document.set_started_at(saved_.journal->header["started_at"].get<std::string>());
    document.set_run_id(saved_.journal->header["run_id"].get<std::string>());
  }
  if (saved_.journal) {
    for (const Json& device : saved_.journal->devices) document.add_device(device);
    resumed.journal_entries = saved_.journal->entries;
    resumed.torn_tail = saved_.journal->torn_tail;
  }
  for (std::size_t i : journaled) document.add_record(std::move(saved_.journal->records[i]));
  resumed.from_journal = journaled.size();
  if (saved_.journal) {
    for (const Json& crash : saved_.journal->crashes) {
      if (!document.has_record(crash["scenario"].get<std::string>(), crash["case_key"].get<std::string>(),
                               crash["implementation"].get<std::string>())) {
        crashes_.push_back(crash);
        if (crash.contains("timeout_seconds")) ++resumed.timeouts;
      }
    }
  }
  resumed.crashes = crashes_.size();
  saved_ = SavedRun{};
  return resumed;
}

std::unique_ptr<CrashNote> ResultsOutput::note_crashes_in(const std::string& scenario, const std::string& case_key,
                                                          const std::string& implementation) {
  std::lock_guard<std::mutex> guard(mutex_);
  return std::make_unique<CrashNote>(journal_->descriptor(), journal_->run_id(), journal_->next_seq(), scenario,
                                     case_key, implementation, path_);
}

const Json* ResultsOutput::crashed_in(const std::string& scenario, const std::string& case_key,
                                      const std::string& implementation) const {
  for (const Json& crash : crashes_) {
    if (crash["scenario"] == scenario && crash["case_key"] == case_key && crash["implementation"] == implementation) {
      return &crash;
    }
  }
  return nullptr;
}

void ResultsOutput::start(ResultsDocument document) {
  std::lock_guard<std::mutex> guard(mutex_);
  // An overwritten run's journal goes first, so a kill cannot leave it beside
  // the new run's file; a resumed run's stays until RESULTS holds its records
  // (the new journal then replaces it by a rename).
  if (existing_ == ExistingResults::overwrite) {
    lock_.check_in_place();
    if (unlinkat(lock_.directory(), journal_path(lock_.target_name()).c_str(), 0) == 0) {
      sync_directory(lock_.directory());
    }
  }
  document_.emplace(std::move(document));
  write_results_file();
  const Json& json = document_->json();
  journal_.emplace(lock_, Json{{"seq", 0},
                               {"journal", kJournalSchemaId},
                               {"run_id", json["run_id"]},
                               {"results_file", escape_invalid_utf8(path_)},
                               {"started_at", json["started_at"]},
                               {"run", run_identity(json)}});
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
  for (Json& record : records) {
    record["run_id"] = document_->json()["run_id"];  // the run it belongs to, in the journal and the file
    entries.push_back(Json{{"record", record}});
  }
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

void ResultsOutput::set_host_calibration(const nlohmann::ordered_json& calibration) {
  std::lock_guard<std::mutex> guard(mutex_);
  document_->set_host_calibration(calibration);
}

bool ResultsOutput::has_record(const std::string& scenario, const std::string& case_key,
                               const std::string& implementation) const {
  std::lock_guard<std::mutex> guard(mutex_);
  return document_->has_record(scenario, case_key, implementation);
}

void ResultsOutput::write_results_file() { write_file_atomically(lock_, document_->json()); }

void ResultsOutput::save() {
  std::lock_guard<std::mutex> guard(mutex_);
  if (!document_) return;
  write_results_file();
  if (journal_) journal_->remove();
  journal_.reset();
}

SavedRecords ResultsOutput::save_where_possible() {
  std::lock_guard<std::mutex> guard(mutex_);
  return save_where_possible_locked();
}

SavedRecords ResultsOutput::save_where_possible_locked() {
  try {
    write_results_file();
    if (journal_) journal_->remove();
    journal_.reset();
    return {path_, false};
  } catch (const OutputDisplacedError&) {
    // Nothing more goes to the displaced place: another writer may own it now.
  } catch (const FileWriteError&) {
    return {journal_ ? path_ + " and " + journal_file() : path_, false};
  }
  const std::string name = "attnbench-" + document_->json()["run_id"].get<std::string>() + ".json";
  std::vector<std::string> refusals;
  for (const fs::path& directory : rescue_directories()) {
    const std::string rescue = (directory / name).string();
    try {
      const FileLock rescue_lock(rescue, "the rescue file " + rescue);
      write_file_atomically(rescue_lock, document_->json());
      return {rescue, true, false};
    } catch (const std::exception& error) {
      refusals.push_back(error.what());
    }
  }
  std::fprintf(stderr, "attnbench: no directory took the records (%s); the results file follows between two "
               "marker lines\n%s\n%s\n%s\n", join(refusals, "; ").c_str(), kRescueBegin,
               document_->json().dump(1).c_str(), kRescueEnd);
  std::fflush(stderr);
  return {"standard error (the text between the marker lines above)", true, true};
}

std::string SavedRecords::how_to_continue() const {
  if (!rescued) return "--resume";
  if (printed) {
    return "-o FILE --resume, FILE holding the text between the marker lines \"" + std::string(kRescueBegin) +
           "\" and \"" + kRescueEnd + "\"";
  }
  return "-o " + where + " --resume";
}

void ResultsOutput::finish() {
  std::lock_guard<std::mutex> guard(mutex_);
  document_->mark_complete();
  write_results_file();
  journal_->remove();
  journal_.reset();
  finished_ = true;
}

StopState ResultsOutput::save_and_stop(SavedRecords& saved) {
  mutex_.lock();  // never unlocked: the process exits after this
  StopState state = StopState::before_start;
  if (finished_) {
    state = StopState::finished;
  } else if (document_) {
    saved = save_where_possible_locked();
    state = StopState::saved;
  }
  lock_.release();
  return state;
}

}  // namespace attnbench
