#include "harness/results/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/errors.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/json_text.hpp"
#include "harness/results/document.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

std::string journal_path(const std::string& results_path) { return results_path + ".journal"; }

namespace {

// The header line: what the run identity comparison reads of it.
const JsonSchema& header_schema() {
  static const JsonSchema schema(Json::parse(R"({
    "type": "object",
    "required": ["journal", "results_file", "started_at", "run"],
    "properties": {
      "journal": {"const": "attnbench.journal/1"},
      "results_file": {"type": "string"},
      "started_at": {"type": "string"},
      "run": {
        "type": "object",
        "required": ["git_revision", "threads", "filter", "shard", "scenarios"],
        "properties": {
          "git_revision": {"type": "string"},
          "threads": {"type": "integer"},
          "filter": {"type": ["string", "null"]},
          "shard": {"type": ["object", "null"]},
          "scenarios": {
            "type": "array",
            "items": {
              "type": "object",
              "required": ["name", "source", "measure", "accuracy", "implementations"],
              "properties": {
                "name": {"type": "string"},
                "source": {"type": "object"},
                "measure": {"type": "object"},
                "accuracy": {"type": "object"},
                "implementations": {"type": "array", "items": {"type": "string"}}
              }
            }
          }
        }
      }
    }
  })"));
  return schema;
}

bool is_crash_entry(const Json& crash) {
  if (!crash.is_object() || crash.size() != 4 || !crash.contains("signal") || !crash["signal"].is_number_integer()) {
    return false;
  }
  for (const char* key : {"scenario", "case_key", "implementation"}) {
    if (!crash.contains(key) || !crash[key].is_string()) return false;
  }
  return true;
}

}  // namespace

JournalContents read_journal(const std::string& path) {
  std::vector<Diagnostic> diagnostics;
  std::string text;
  if (!read_text_file(path, text, diagnostics)) throw InputError(diagnostics);
  JournalContents contents;
  std::size_t start = 0;
  for (std::size_t line = 1; start < text.size(); ++line) {
    const std::size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      contents.torn_tail = true;
      break;
    }
    const std::string where = "line " + std::to_string(line);
    const std::string content = text.substr(start, end - start);
    start = end + 1;
    Json entry = Json::parse(content, nullptr, false);
    if (line == 1) {
      const std::vector<SchemaError> errors = header_schema().validate(entry);
      if (entry.is_discarded() || !errors.empty()) {
        throw InputError({Diagnostic{path, where,
                                     std::string("not an attnbench journal header (\"journal\": \"") + kJournalSchemaId +
                                         "\" with the run's identity)" +
                                         (errors.empty() ? "" : ": " + format_error(errors.front()))}});
      }
      contents.header = std::move(entry);
    } else if (entry.is_object() && entry.size() == 1 && entry.contains("record") && entry["record"].is_object()) {
      contents.records.push_back(std::move(entry["record"]));
    } else if (entry.is_object() && entry.size() == 1 && entry.contains("device") && entry["device"].is_object()) {
      contents.devices.push_back(std::move(entry["device"]));
    } else if (entry.is_object() && entry.size() == 1 && entry.contains("crashed") && is_crash_entry(entry["crashed"])) {
      contents.crashes.push_back(std::move(entry["crashed"]));
    } else {
      throw InputError({Diagnostic{path, where,
                                   "is not a journal entry ({\"record\": …}, {\"device\": …} or {\"crashed\": …}); "
                                   "the journal was damaged after it was written"}});
    }
  }
  if (contents.header.is_null()) {
    throw InputError({Diagnostic{path, "", "holds no header line (the run was killed while creating it)"}});
  }
  return contents;
}

JournalWriter::JournalWriter(std::string path, const Json& header) : path_(std::move(path)) {
  descriptor_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (descriptor_ < 0) throw FileWriteError(path_, std::strerror(errno));
  append_lines(header.dump() + "\n");
}

JournalWriter::~JournalWriter() {
  if (descriptor_ >= 0) close(descriptor_);
}

void JournalWriter::append(const std::vector<Json>& entries) {
  std::string lines;
  for (const Json& entry : entries) lines += entry.dump() + "\n";
  append_lines(lines);
}

void JournalWriter::append_lines(const std::string& lines) {
  if (lines.empty()) return;
  if (!write_all(descriptor_, lines) || fdatasync(descriptor_) != 0) {
    const int error = errno;
    // A partly written line would join the next one: cut it off. Should that
    // fail too, the reader still ignores a last line without its newline.
    const bool cut = ftruncate(descriptor_, length_) == 0;
    static_cast<void>(cut);
    throw FileWriteError(path_, std::strerror(error));
  }
  length_ += static_cast<off_t>(lines.size());
}

void JournalWriter::remove() {
  if (descriptor_ >= 0) close(descriptor_);
  descriptor_ = -1;
  unlink(path_.c_str());
}

}  // namespace attnbench
