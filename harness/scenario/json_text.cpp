#include "harness/scenario/json_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <set>
#include <vector>

#include "harness/user_paths.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

// Documents nested deeper than this are refused: nothing we read needs more, and
// the validators that walk a document recurse once per level.
constexpr std::size_t kMaxDepth = 64;

struct TooDeep {};

// Builds the document from the parser's events, as nlohmann's own DOM parser
// does (each value placed once, so the cost stays linear in the text), while
// keeping the key path of every key given twice in one object and stopping
// the parse (TooDeep) past kMaxDepth. An object's members are gathered apart
// and moved into it at its end, into storage of the right size: an ordered
// object that grows copies its members (their keys are const), which for a
// results file's top level would copy every record.
class CheckedDocumentBuilder : public nlohmann::json_sax<Json> {
 public:
  explicit CheckedDocumentBuilder(std::vector<std::string>& duplicates) : duplicates_(duplicates) {}

  Json& document() { return document_; }

  bool null() override { return place(Json(nullptr)); }
  bool boolean(bool value) override { return place(Json(value)); }
  bool number_integer(number_integer_t value) override { return place(Json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return place(Json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return place(Json(value)); }
  bool string(string_t& value) override { return place(Json(std::move(value))); }
  bool binary(binary_t& value) override { return place(Json(std::move(value))); }

  bool start_object(std::size_t) override { return enter(Json::object()); }
  bool start_array(std::size_t) override { return enter(Json::array()); }
  bool end_object() override {
    Frame& frame = frames_.back();
    Json::object_t& object = frame.value->get_ref<Json::object_t&>();
    object.reserve(frame.members.size());
    for (auto& [name, value] : frame.members) object.emplace_back(std::move(name), std::move(value));
    return leave();
  }
  bool end_array() override { return leave(); }

  bool key(string_t& key) override {
    Frame& frame = frames_.back();
    for (const auto& [name, value] : frame.members) {
      if (name == key) duplicates_.push_back(path_to(key));
    }
    frame.members.emplace_back(std::move(key), nullptr);
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& error) override {
    throw error;  // a syntax error, or a number beyond a double
  }

 private:
  struct Frame {
    Json* value;  // an array, or an object that receives `members` at its end
    std::vector<std::pair<std::string, Json>> members;  // an object's members so far, the last one being read
    // How the path names the value being read: ".key" in an object, "[i]" in an array (its last element).
    std::string step() const {
      return value->is_object() ? members.back().first : "[" + std::to_string(value->size() - 1) + "]";
    }
  };

  // Puts `value` where the parser is and returns true; returns where it went.
  bool place(Json value) {
    put(std::move(value));
    return true;
  }
  Json* put(Json value) {
    if (frames_.empty()) {
      document_ = std::move(value);
      return &document_;
    }
    Frame& frame = frames_.back();
    if (frame.value->is_array()) {
      frame.value->push_back(std::move(value));
      return &frame.value->back();
    }
    Json& member = frame.members.back().second;
    member = std::move(value);
    return &member;
  }
  bool enter(Json container) {
    Json* placed = put(std::move(container));
    frames_.push_back(Frame{placed});
    if (frames_.size() > kMaxDepth) throw TooDeep{};
    return true;
  }
  bool leave() {
    frames_.pop_back();
    return true;
  }

  std::string path_to(const std::string& last_key) const {
    std::string path;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& frame = frames_[i];
      if (frame.value->is_object()) path += (path.empty() ? "" : ".") + frame.step();
      else path += frame.step();
    }
    return path + (path.empty() ? "" : ".") + last_key;
  }

  Json document_;
  std::vector<Frame> frames_;
  std::vector<std::string>& duplicates_;
};

// Parses what `first`..`last` yield, with the checks of parse_json_document.
template <class Iterator>
Json parse_checked(Iterator first, Iterator last, const std::string& file, std::vector<Diagnostic>& diagnostics) {
  std::vector<std::string> duplicates;
  CheckedDocumentBuilder builder(duplicates);
  try {
    Json::sax_parse(first, last, &builder, nlohmann::detail::input_format_t::json, /*strict=*/true,
                    /*ignore_comments=*/true);
  } catch (const Json::exception& error) {  // syntax errors and numbers beyond a double
    std::string message = error.what();
    const auto prefix_end = message.find("] ");
    if (prefix_end != std::string::npos) message = message.substr(prefix_end + 2);
    diagnostics.push_back({file, "", "not valid JSON: " + message});
    return nullptr;
  } catch (const TooDeep&) {
    diagnostics.push_back({file, "", "nested more than " + std::to_string(kMaxDepth) + " levels deep"});
    return nullptr;
  }
  for (const auto& path : duplicates) {
    diagnostics.push_back({file, path, "key given twice (the second would silently win); keep one"});
  }
  if (!duplicates.empty()) return nullptr;
  return std::move(builder.document());
}

// "64 MiB", "16 GiB": a bound as the refusal names it.
std::string bound_text(std::size_t bytes) {
  return bytes % (std::size_t{1} << 30) == 0 ? std::to_string(bytes >> 30) + " GiB"
                                             : std::to_string(bytes >> 20) + " MiB";
}

// An input file opened with the checks every reader makes, read in pieces of
// at most 1 MiB. A problem (not a regular file, over the bound, a read error)
// becomes a diagnostic, and the file then reads as ended.
class BoundedFile {
 public:
  BoundedFile(const std::string& path, const FileSizeBound& bound, std::vector<Diagnostic>& diagnostics)
      : path_(path), bound_(bound), diagnostics_(diagnostics) {
    open_checked();
  }
  BoundedFile(const BoundedFile&) = delete;
  BoundedFile& operator=(const BoundedFile&) = delete;
  ~BoundedFile() {
    if (descriptor_ >= 0) close(descriptor_);
  }

  bool failed() const { return failed_; }
  std::size_t size() const { return size_; }  // as fstat said when it was opened

  // The next piece; empty at the end of the file or after a problem.
  std::string_view next() {
    if (failed_ || descriptor_ < 0) return {};
    for (;;) {
      const ssize_t count = read(descriptor_, buffer_.data(), buffer_.size());
      if (count < 0 && errno == EINTR) continue;
      if (count < 0) {
        refuse(std::string("cannot read the file: ") + std::strerror(errno));
        return {};
      }
      total_ += static_cast<std::size_t>(count);
      if (total_ > bound_.max_bytes) {  // it grew
        refuse_too_large();
        return {};
      }
      return std::string_view(buffer_.data(), static_cast<std::size_t>(count));
    }
  }

 private:
  void open_checked() {
    const std::string& path = path_;
    if (const std::string problem = path_name_problem(path); !problem.empty()) return refuse(problem);
    // Non-blocking, so opening a FIFO does not wait for a writer; fstat then
    // judges what was opened, not what the name pointed to a moment earlier.
    descriptor_ = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (descriptor_ < 0) return refuse(std::string("cannot read the file: ") + std::strerror(errno));
    struct stat status {};
    if (fstat(descriptor_, &status) != 0) return refuse(std::string("cannot read the file: ") + std::strerror(errno));
    if (S_ISDIR(status.st_mode)) return refuse("is a directory, not a file");
    if (!S_ISREG(status.st_mode)) {
      return refuse(std::string("is not a regular file (") +
                    (S_ISFIFO(status.st_mode) ? "a FIFO" : S_ISSOCK(status.st_mode) ? "a socket" : "a device") +
                    "); give the path of a file");
    }
    if (static_cast<std::uint64_t>(status.st_size) > bound_.max_bytes) return refuse_too_large();
    size_ = static_cast<std::size_t>(status.st_size);
    buffer_.resize(std::min<std::size_t>(std::size_t{1} << 20, std::max<std::size_t>(size_, 4096)));
  }
  void refuse(const std::string& why) {
    diagnostics_.push_back({path_, "", why});
    failed_ = true;
  }
  void refuse_too_large() {
    refuse("is larger than " + bound_text(bound_.max_bytes) + ", the most " + bound_.kind + " may hold");
  }

  std::string path_;
  FileSizeBound bound_;
  std::vector<Diagnostic>& diagnostics_;
  int descriptor_ = -1;
  bool failed_ = false;
  std::size_t size_ = 0, total_ = 0;
  std::vector<char> buffer_;
};

// The characters of a BoundedFile, one at a time, for the JSON parser: an
// input iterator over the pieces as they are read.
class FileCharacters {
 public:
  explicit FileCharacters(BoundedFile& file) : file_(file) {}
  bool at_end() {
    if (piece_.empty() && !ended_) {
      piece_ = file_.next();
      ended_ = piece_.empty();
    }
    return piece_.empty();
  }
  const char& current() const { return piece_.front(); }
  void advance() { piece_.remove_prefix(1); }

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = char;
    using difference_type = std::ptrdiff_t;
    using pointer = const char*;
    using reference = const char&;

    explicit Iterator(FileCharacters* source) : source_(source) {}
    reference operator*() const { return source_->current(); }
    Iterator& operator++() {
      source_->advance();
      return *this;
    }
    bool operator==(const Iterator& other) const { return at_end() == other.at_end(); }
    bool operator!=(const Iterator& other) const { return !(*this == other); }

   private:
    bool at_end() const { return source_ == nullptr || source_->at_end(); }
    FileCharacters* source_;  // null for the end
  };

 private:
  BoundedFile& file_;
  std::string_view piece_;
  bool ended_ = false;
};

}  // namespace

Json parse_json_document(const std::string& text, const std::string& file, std::vector<Diagnostic>& diagnostics) {
  return parse_checked(text.begin(), text.end(), file, diagnostics);
}

Json parse_json_file(const std::string& path, const FileSizeBound& bound, std::vector<Diagnostic>& diagnostics) {
  BoundedFile input(path, bound, diagnostics);
  if (input.failed()) return nullptr;
  FileCharacters characters(input);
  std::vector<Diagnostic> parse_problems;
  Json document = parse_checked(FileCharacters::Iterator(&characters), FileCharacters::Iterator(nullptr), path,
                                parse_problems);
  if (input.failed()) return nullptr;  // the file's own problem says why the text ended early
  diagnostics.insert(diagnostics.end(), parse_problems.begin(), parse_problems.end());
  return document;
}

bool read_file_in_pieces(const std::string& path, const FileSizeBound& bound,
                         const std::function<void(std::string_view)>& consume, std::vector<Diagnostic>& diagnostics) {
  BoundedFile input(path, bound, diagnostics);
  for (std::string_view piece; !(piece = input.next()).empty();) consume(piece);
  return !input.failed();
}

bool read_text_file(const std::string& path, std::string& text, std::vector<Diagnostic>& diagnostics,
                    const FileSizeBound& bound) {
  text.clear();
  BoundedFile input(path, bound, diagnostics);
  text.reserve(input.size());
  for (std::string_view piece; !(piece = input.next()).empty();) text.append(piece);
  return !input.failed();
}

}  // namespace attnbench
