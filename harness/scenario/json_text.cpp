#include "harness/scenario/json_text.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
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

// Follows the parser's events to know the key path of each key and to spot a
// key given twice in one object; stops the parse (TooDeep) past kMaxDepth.
class DuplicateKeyFinder {
 public:
  explicit DuplicateKeyFinder(std::vector<std::string>& duplicates) : duplicates_(duplicates) {}

  bool operator()(int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
        enter_value();
        frames_.push_back(Frame{true, {}, "", 0});
        if (frames_.size() > kMaxDepth) throw TooDeep{};
        break;
      case Json::parse_event_t::array_start:
        enter_value();
        frames_.push_back(Frame{false, {}, "", 0});
        if (frames_.size() > kMaxDepth) throw TooDeep{};
        break;
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        frames_.pop_back();
        break;
      case Json::parse_event_t::key: {
        Frame& frame = frames_.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second) duplicates_.push_back(path_to(frame.key));
        break;
      }
      case Json::parse_event_t::value:
        enter_value();
        break;
    }
    return true;
  }

 private:
  struct Frame {
    bool is_object;
    std::set<std::string> keys;
    std::string key;    // current member key (objects)
    long next_index;    // next element index (arrays)
  };

  // A value starts inside the innermost frame: arrays count their elements.
  void enter_value() {
    if (!frames_.empty() && !frames_.back().is_object) {
      frames_.back().key = "[" + std::to_string(frames_.back().next_index++) + "]";
    }
  }

  std::string path_to(const std::string& last_key) const {
    std::string path;
    for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
      const Frame& frame = frames_[i];
      if (frame.is_object) path += (path.empty() ? "" : ".") + frame.key;
      else path += frame.key;
    }
    return path + (path.empty() ? "" : ".") + last_key;
  }

  std::vector<Frame> frames_;
  std::vector<std::string>& duplicates_;
};

}  // namespace

Json parse_json_document(const std::string& text, const std::string& file,
                         std::vector<Diagnostic>& diagnostics) {
  std::vector<std::string> duplicates;
  Json document;
  try {
    document = Json::parse(text, DuplicateKeyFinder(duplicates), /*allow_exceptions=*/true,
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
  return document;
}

namespace {

// "64 MiB", "16 GiB": a bound as the refusal names it.
std::string bound_text(std::size_t bytes) {
  return bytes % (std::size_t{1} << 30) == 0 ? std::to_string(bytes >> 30) + " GiB"
                                             : std::to_string(bytes >> 20) + " MiB";
}

}  // namespace

bool read_file_in_pieces(const std::string& path, const FileSizeBound& bound,
                         const std::function<void(std::string_view)>& consume, std::vector<Diagnostic>& diagnostics) {
  const auto refuse = [&](const std::string& why) {
    diagnostics.push_back({path, "", why});
    return false;
  };
  if (const std::string problem = path_name_problem(path); !problem.empty()) return refuse(problem);
  // Non-blocking, so opening a FIFO does not wait for a writer; fstat then
  // judges what was opened, not what the name pointed to a moment earlier.
  const int descriptor = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (descriptor < 0) return refuse(std::string("cannot read the file: ") + std::strerror(errno));
  struct Closer {
    int descriptor;
    ~Closer() { close(descriptor); }
  } closer{descriptor};
  struct stat status {};
  if (fstat(descriptor, &status) != 0) return refuse(std::string("cannot read the file: ") + std::strerror(errno));
  if (S_ISDIR(status.st_mode)) return refuse("is a directory, not a file");
  if (!S_ISREG(status.st_mode)) {
    return refuse(std::string("is not a regular file (") +
                  (S_ISFIFO(status.st_mode) ? "a FIFO" : S_ISSOCK(status.st_mode) ? "a socket" : "a device") +
                  "); give the path of a file");
  }
  const auto too_large = [&] {
    return refuse("is larger than " + bound_text(bound.max_bytes) + ", the most " + bound.kind + " may hold");
  };
  if (static_cast<std::uint64_t>(status.st_size) > bound.max_bytes) return too_large();
  std::vector<char> buffer(std::size_t{1} << 20);
  std::size_t total = 0;
  for (;;) {
    const ssize_t count = read(descriptor, buffer.data(), buffer.size());
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) return refuse(std::string("cannot read the file: ") + std::strerror(errno));
    if (count == 0) return true;
    total += static_cast<std::size_t>(count);
    if (total > bound.max_bytes) return too_large();  // it grew
    consume(std::string_view(buffer.data(), static_cast<std::size_t>(count)));
  }
}

bool read_text_file(const std::string& path, std::string& text, std::vector<Diagnostic>& diagnostics,
                    const FileSizeBound& bound) {
  text.clear();
  struct stat status {};
  if (stat(path.c_str(), &status) == 0 && S_ISREG(status.st_mode) &&
      static_cast<std::uint64_t>(status.st_size) <= bound.max_bytes) {
    text.reserve(static_cast<std::size_t>(status.st_size));
  }
  return read_file_in_pieces(path, bound, [&](std::string_view piece) { text.append(piece); }, diagnostics);
}

}  // namespace attnbench
