#include "harness/results/journal.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "harness/errors.hpp"
#include "harness/results/document.hpp"
#include "harness/results/file_lock.hpp"
#include "harness/scenario/json_schema.hpp"
#include "harness/scenario/json_text.hpp"

namespace attnbench {

using Json = nlohmann::ordered_json;

std::string journal_path(const std::string& results_path) { return results_path + ".journal"; }

namespace {

// CRC-32C's table for the reflected polynomial 0x82F63B78, one byte at a time.
constexpr std::array<std::uint32_t, 256> crc32c_table() {
  std::array<std::uint32_t, 256> table{};
  for (std::uint32_t byte = 0; byte < 256; ++byte) {
    std::uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (crc & 1 ? 0x82F63B78u : 0u);
    table[byte] = crc;
  }
  return table;
}

// `{"crc32c":"` + 8 hex digits + `",`: what every line opens with.
constexpr std::string_view kChecksumOpening = "{\"crc32c\":\"";
constexpr std::size_t kChecksumPrefixLength = kChecksumOpening.size() + 8 + 2;

std::string hex32(std::uint32_t value) {
  char digits[9];
  std::snprintf(digits, sizeof digits, "%08x", value);
  return digits;
}

// The checksum a line's rest (all after the prefix) should carry in run `run_id`.
std::uint32_t line_checksum(const std::string& run_id, std::string_view rest) {
  return crc32c(rest, crc32c(run_id));
}

// The header line: what the run identity comparison reads of it.
const JsonSchema& header_schema() {
  static const JsonSchema schema(Json::parse(R"({
    "type": "object",
    "required": ["crc32c", "seq", "journal", "run_id", "results_file", "started_at", "run"],
    "properties": {
      "seq": {"const": 0},
      "journal": {"const": "attnbench.journal/2"},
      "run_id": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
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

// A "crashed" entry's content: {"scenario", "case_key", "implementation", and
// "signal" (the process died of it) or "timeout_seconds" (a call passed the
// host call limit and the process restarted)}.
bool is_crash_entry(const Json& crash) {
  if (!crash.is_object() || crash.size() != 4) return false;
  const bool signal = crash.contains("signal") && crash["signal"].is_number_integer();
  const bool timeout = crash.contains("timeout_seconds") && crash["timeout_seconds"].is_number();
  if (!signal && !timeout) return false;
  for (const char* key : {"scenario", "case_key", "implementation"}) {
    if (!crash.contains(key) || !crash[key].is_string()) return false;
  }
  return true;
}

// The checksum a line says it has, or false when it does not open with one.
bool stated_checksum(std::string_view line, std::string& hex) {
  if (line.size() < kChecksumPrefixLength || line.substr(0, kChecksumOpening.size()) != kChecksumOpening ||
      line.substr(kChecksumOpening.size() + 8, 2) != "\",") {
    return false;
  }
  hex = std::string(line.substr(kChecksumOpening.size(), 8));
  return hex.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// A line's JSON, or a discarded value when it is none.
Json parsed(std::string_view text) { return Json::parse(text.data(), text.data() + text.size(), nullptr, false); }

// Reads the journal's lines one at a time, checking each as it comes.
class JournalReader {
 public:
  explicit JournalReader(const std::string& path) : path_(path) {}

  void line(std::string_view text) {
    const std::string where = "line " + std::to_string(++line_number_);
    if (line_number_ == 1) return header(text, where);
    std::string hex;
    Json entry = stated_checksum(text, hex) ? parsed(text) : Json(nullptr);
    const bool shaped = entry.is_object() && entry.size() == 3 && entry.contains("seq") &&
                        entry["seq"].is_number_unsigned() &&
                        ((entry.contains("record") && entry["record"].is_object()) ||
                         (entry.contains("device") && entry["device"].is_object()) ||
                         (entry.contains("crashed") && is_crash_entry(entry["crashed"])));
    if (!shaped) {
      return problem(where, "is not a journal entry ({\"crc32c\": …, \"seq\": N, \"record\", \"device\" or "
                            "\"crashed\": {…}}); the journal was damaged after it was written");
    }
    if (hex32(line_checksum(run_id_, text.substr(kChecksumPrefixLength))) != hex) {
      return problem(where, "fails its checksum: the line was edited or damaged after it was written, or comes "
                            "from another run's journal");
    }
    const std::uint64_t seq = entry["seq"].get<std::uint64_t>();
    if (seq != next_seq_) {
      problem(where, "is entry " + std::to_string(seq) + " where entry " + std::to_string(next_seq_) +
                         " comes next: lines were removed, repeated or moved after they were written");
    }
    next_seq_ = seq + 1;
    ++contents_.entries;
    if (entry.contains("record")) {
      contents_.records.push_back(std::move(entry["record"]));
    } else if (entry.contains("device")) {
      contents_.devices.push_back(std::move(entry["device"]));
    } else {
      contents_.crashes.push_back(std::move(entry["crashed"]));
    }
  }

  JournalContents finish(bool torn_tail) {
    if (!problems_.empty()) throw InputError(problems_);
    contents_.torn_tail = torn_tail;
    return std::move(contents_);
  }

 private:
  void header(std::string_view text, const std::string& where) {
    std::string hex;
    Json entry = parsed(text);
    const bool checksummed = stated_checksum(text, hex);
    if (entry.is_object() && entry.contains("journal") && entry["journal"] == "attnbench.journal/1") {
      throw InputError({Diagnostic{path_, where,
                                   "is the journal of an older attnbench (attnbench.journal/1); continue the run "
                                   "with the build that started it"}});
    }
    const std::vector<SchemaError> errors = header_schema().validate(entry);
    if (!checksummed || entry.is_discarded() || !errors.empty()) {
      throw InputError({Diagnostic{path_, where,
                                   std::string("not an attnbench journal header (\"journal\": \"") + kJournalSchemaId +
                                       "\" with the run's id and identity)" +
                                       (errors.empty() ? "" : ": " + format_error(errors.front()))}});
    }
    run_id_ = entry["run_id"].get<std::string>();
    if (hex32(line_checksum(run_id_, text.substr(kChecksumPrefixLength))) != hex) {
      throw InputError({Diagnostic{path_, where,
                                   "the header fails its checksum: it was edited or damaged after it was written"}});
    }
    entry.erase("crc32c");
    contents_.header = std::move(entry);
  }

  void problem(const std::string& where, const std::string& message) { problems_.push_back({path_, where, message}); }

  std::string path_;
  std::size_t line_number_ = 0;
  std::string run_id_;
  std::uint64_t next_seq_ = 1;
  JournalContents contents_;
  std::vector<Diagnostic> problems_;
};

}  // namespace

std::uint32_t crc32c(std::string_view bytes, std::uint32_t crc) {
  static constexpr std::array<std::uint32_t, 256> kTable = crc32c_table();
  crc = ~crc;
  for (const char byte : bytes) crc = (crc >> 8) ^ kTable[(crc ^ static_cast<unsigned char>(byte)) & 0xFF];
  return ~crc;
}

std::string journal_line(const Json& entry, const std::string& run_id) {
  const std::string text = entry.dump();
  const std::string rest = text.substr(1);  // after the opening brace
  return std::string(kChecksumOpening) + hex32(line_checksum(run_id, rest)) + "\"," + rest + "\n";
}

JournalContents read_journal(const std::string& path) {
  JournalReader reader(path);
  std::string pending;  // the start of a line whose end has not been read yet
  std::vector<Diagnostic> diagnostics;
  const bool read = read_file_in_pieces(
      path, kResultsFileBound,
      [&](std::string_view piece) {
        for (std::size_t end; (end = piece.find('\n')) != std::string_view::npos; piece.remove_prefix(end + 1)) {
          if (pending.empty()) {
            reader.line(piece.substr(0, end));
          } else {
            pending.append(piece.substr(0, end));
            reader.line(pending);
            pending.clear();
          }
        }
        pending.append(piece);
      },
      diagnostics);
  if (!read) throw InputError(diagnostics);
  return reader.finish(!pending.empty());
}

JournalWriter::JournalWriter(const FileLock& lock, const Json& header)
    : lock_(lock), path_(journal_path(lock.target())), run_id_(header["run_id"].get<std::string>()) {
  lock_.check_in_place();
  const std::string line = journal_line(header, run_id_);
  descriptor_ = replace_file_in(lock_.directory(), journal_path(lock_.target_name()),
                                temporary_path(lock_.target_name()),
                                [&](int descriptor) { return write_all(descriptor, line); }, path_, true);
  length_ = static_cast<off_t>(line.size());
}

JournalWriter::~JournalWriter() {
  if (descriptor_ >= 0) close(descriptor_);
}

void JournalWriter::append(const std::vector<Json>& entries) {
  if (entries.empty()) return;
  lock_.check_in_place();
  std::string lines;
  std::uint64_t seq = next_seq_;
  for (const Json& entry : entries) {
    Json numbered{{"seq", seq++}};
    for (const auto& [key, value] : entry.items()) numbered[key] = value;
    lines += journal_line(numbered, run_id_);
  }
  if (!write_all(descriptor_, lines) || fdatasync(descriptor_) != 0) {
    const int error = errno;
    // A partly written line would join the next one: cut it off. Should that
    // fail too, the reader still ignores a last line without its newline.
    const bool cut = ftruncate(descriptor_, length_) == 0;
    static_cast<void>(cut);
    throw FileWriteError(path_, std::strerror(error));
  }
  length_ += static_cast<off_t>(lines.size());
  next_seq_ = seq;
}

void JournalWriter::remove() {
  if (descriptor_ >= 0) close(descriptor_);
  descriptor_ = -1;
  if (unlinkat(lock_.directory(), journal_path(lock_.target_name()).c_str(), 0) != 0 && errno != ENOENT) {
    throw FileWriteError(path_, std::string("cannot delete it: ") + std::strerror(errno));
  }
  if (!sync_directory(lock_.directory())) {
    throw FileWriteError(path_, std::string("the directory could not be synced: ") + std::strerror(errno));
  }
}

}  // namespace attnbench
