// JSON Schema (Draft 2020-12 subset) validation; see harness/scenario/json_schema.hpp.
//
// The constructor walks the schema once (SchemaCompiler): it rejects what the
// validator cannot enforce, compiles every pattern and resolves every $ref. A
// validation (Validator) then applies every keyword and collects every finding;
// the findings are put in document order and duplicates dropped at the end.
#include "harness/scenario/json_schema.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "harness/format.hpp"
#include "harness/message_text.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;
using Pointer = Json::json_pointer;

// ---- Rendering values in messages ----

constexpr std::size_t kValueWidth = 40;        // longest rendering of a value
constexpr std::size_t kDescriptionWidth = 80;  // longest rendering of a schema's description

// A value in JSON form, shortened: "fp8" (with the quotes), 128, {"a":1}.
std::string render(const Json& value) {
  return shorten(value.dump(-1, ' ', false, Json::error_handler_t::replace), kValueWidth);
}

// "a", "a or b", "a, b or c".
std::string join_alternatives(const std::vector<std::string>& parts) {
  std::string joined;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) joined += i + 1 == parts.size() ? " or " : ", ";
    joined += parts[i];
  }
  return joined;
}

// "1 item", "3 items".
std::string count_of(std::uint64_t count, std::string_view noun) {
  return std::to_string(count) + " " + std::string(noun) + (count == 1 ? "" : "s");
}

std::string list_values(const Json& values) {
  std::vector<std::string> rendered;
  for (const Json& value : values) rendered.push_back(render(value));
  return join(rendered, ", ");
}

// ---- JSON values as the standard sees them ----

bool is_integer_valued(const Json& value) {
  if (value.is_number_integer()) return true;  // signed or unsigned
  if (!value.is_number_float()) return false;
  const double x = value.get<double>();
  return std::isfinite(x) && std::trunc(x) == x;
}

// Exact for every int64 and uint64 (a long double has a 64-bit mantissa or more).
long double as_long_double(const Json& number) {
  if (number.is_number_unsigned()) return static_cast<long double>(number.get<std::uint64_t>());
  if (number.is_number_integer()) return static_cast<long double>(number.get<std::int64_t>());
  return number.get<double>();
}

int compare_numbers(const Json& a, const Json& b) {
  const long double x = as_long_double(a);
  const long double y = as_long_double(b);
  return (x > y) - (x < y);
}

// Equality as enum, const and uniqueItems define it: numbers by value (1 == 1.0),
// objects regardless of key order.
bool same_value(const Json& a, const Json& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.type() != b.type()) return false;
  if (a.is_array()) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), same_value);
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (const auto& member : a.items()) {
      const auto other = b.find(member.key());
      if (other == b.end() || !same_value(member.value(), *other)) return false;
    }
    return true;
  }
  return a == b;
}

// A text that two values share exactly when same_value holds for them, so
// uniqueness is decided by sorting instead of comparing every pair.
std::string canonical_form(const Json& value) {
  if (value.is_number()) {
    const long double x = as_long_double(value);
    if (x == 0) return "#0";  // 0 and -0.0
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "#%.21Lg", x);  // enough digits to tell any two long doubles apart
    return buffer;
  }
  if (value.is_array()) {
    std::string form = "[";
    for (const Json& item : value) form += canonical_form(item) + ",";
    return form + "]";
  }
  if (value.is_object()) {
    std::map<std::string, std::string> members;
    for (const auto& member : value.items()) members.emplace(member.key(), canonical_form(member.value()));
    std::string form = "{";
    for (const auto& [key, member] : members) {
      form += Json(key).dump(-1, ' ', false, Json::error_handler_t::replace) + ":" + member + ",";
    }
    return form + "}";
  }
  return value.dump(-1, ' ', false, Json::error_handler_t::replace);  // null, booleans, strings: their JSON text
}

// Same JSON type, counting all numbers as one.
bool same_kind(const Json& a, const Json& b) {
  return (a.is_number() && b.is_number()) || a.type() == b.type();
}

// |value| of an integer of either signedness.
std::uint64_t magnitude(const Json& integer) {
  if (integer.is_number_unsigned()) return integer.get<std::uint64_t>();
  const std::int64_t x = integer.get<std::int64_t>();
  return x < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
}

// Exact for integers; for other numbers, as Python's jsonschema decides it.
bool is_multiple_of(const Json& value, const Json& divisor) {
  if (value.is_number_integer() && divisor.is_number_integer()) {
    return magnitude(value) % magnitude(divisor) == 0;
  }
  const double quotient = value.get<double>() / divisor.get<double>();
  return std::isfinite(quotient) && std::trunc(quotient) == quotient;
}

// A count keyword's value (checked at construction to be a non-negative integer).
std::uint64_t count_limit(const Json& limit) {
  if (limit.is_number_integer()) return limit.get<std::uint64_t>();
  const double x = limit.get<double>();
  return x >= 0x1p64 ? std::numeric_limits<std::uint64_t>::max() : static_cast<std::uint64_t>(x);
}

std::uint64_t code_points(const std::string& text) {
  return static_cast<std::uint64_t>(std::count_if(
      text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// ---- Types ----

constexpr std::string_view kTypeNames[] = {"null", "boolean", "object", "array",
                                           "number", "integer", "string"};

bool has_type(const Json& value, std::string_view type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "number") return value.is_number();
  if (type == "integer") return is_integer_valued(value);
  return value.is_string();  // the constructor admits no other name
}

// The value of a "type" keyword as a list of names.
std::vector<std::string> type_list(const Json& type) {
  if (type.is_string()) return {type.get<std::string>()};
  return type.get<std::vector<std::string>>();
}

bool matches_type(const Json& type, const Json& value) {
  const std::vector<std::string> names = type_list(type);
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& name) { return has_type(value, name); });
}

// "a string", "an integer", "null".
std::string with_article(std::string_view type) {
  if (type == "null") return "null";
  const bool vowel = type == "integer" || type == "object" || type == "array";
  return std::string(vowel ? "an " : "a ") + std::string(type);
}

// "an integer or null".
std::string describe_types(const Json& type) {
  std::vector<std::string> phrases;
  for (const std::string& name : type_list(type)) phrases.push_back(with_article(name));
  return join_alternatives(phrases);
}

// `got a string ("1k")`, `got null`; integral numbers count as integers.
std::string got(const Json& value) {
  std::string_view type = "string";
  if (value.is_null()) return "got null";
  if (value.is_boolean()) type = "boolean";
  if (value.is_object()) type = "object";
  if (value.is_array()) type = "array";
  if (value.is_number()) type = is_integer_valued(value) ? "integer" : "number";
  return "got " + with_article(type) + " (" + render(value) + ")";
}

// ---- Suggestions ----

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  const std::optional<std::string> suggestion = closest_word(word, candidates);
  return suggestion ? " (did you mean " + render(Json(*suggestion)) + "?)" : "";
}

// ---- Locations in the document ----

bool is_plain_key(std::string_view key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || c == '-';
  });
}

// Where a value is, as a chain to its parent's Location on the caller's stack:
// built for every value checked, so the path and order are spelled out only
// when a finding is reported.
struct Location {
  const Location* parent = nullptr;  // null at the root
  const std::string* key = nullptr;  // the member's name; null for an array element
  std::size_t position = 0;          // within the parent (the member's place, the element's index)

  Location member(const std::string& name, std::size_t place) const { return Location{this, &name, place}; }
  Location element(std::size_t index) const { return Location{this, nullptr, index}; }

  std::string path() const {
    if (parent == nullptr) return "";
    std::string text = parent->path();
    if (key == nullptr) return text + "[" + std::to_string(position) + "]";
    if (!is_plain_key(*key) || key->size() > kQuoteWidth) return text + "[" + quote(*key) + "]";
    return text + (text.empty() ? "" : ".") + *key;
  }
  // The position of each step within its parent, for sorting.
  std::vector<std::size_t> order() const {
    if (parent == nullptr) return {};
    std::vector<std::size_t> steps = parent->order();
    steps.push_back(position);
    return steps;
  }
};

struct Finding {
  std::vector<std::size_t> order;
  SchemaError error;
};
using Findings = std::vector<Finding>;

void report(Findings& out, const Location& at, std::string message) {
  out.push_back({at.order(), {at.path(), std::move(message)}});
}

// ---- Locations in the schema ----

// A reference token of a JSON pointer.
std::string escape_token(std::string_view token) {
  std::string escaped;
  for (const char c : token) {
    if (c == '~') escaped += "~0";
    else if (c == '/') escaped += "~1";
    else escaped += c;
  }
  return escaped;
}

[[noreturn]] void fail(const std::string& where, const std::string& problem) {
  throw std::invalid_argument("JSON schema #" + where + ": " + problem);
}

// A $ref's fragment is a URI fragment: "%25" stands for '%', "%20" for ' ', ...
std::string percent_decode(std::string_view text, const std::string& where) {
  std::string decoded;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      decoded += text[i];
      continue;
    }
    unsigned byte = 0;
    const char* first = text.data() + i + 1;
    const char* last = first + std::min<std::size_t>(2, text.size() - i - 1);
    if (last - first != 2 || std::from_chars(first, last, byte, 16).ptr != last) {
      fail(where, "malformed percent escape in " + render(Json(std::string(text))));
    }
    decoded += static_cast<char>(byte);
    i += 2;
  }
  return decoded;
}

// What a keyword's value must be, and whether it holds subschemas.
enum class Kind {
  annotation,        // ignored
  dialect,           // $schema: root only, and Draft 2020-12
  root_annotation,   // $id: root only (elsewhere it would change how $ref resolves)
  ref,               // $ref
  type,              // a type name or a non-empty array of distinct ones
  any_value,         // const
  array,             // enum
  schema,            // a subschema applied to parts of the instance
  schema_map,        // an object of subschemas ($defs, properties, patternProperties)
  schema_list,       // prefixItems: a non-empty array of subschemas
  in_place,          // not, if, then, else: a subschema applied to the instance itself
  in_place_list,     // allOf, anyOf, oneOf
  count,             // a non-negative integer
  number,
  positive_number,   // multipleOf
  boolean,           // uniqueItems
  unique_strings,    // required
  pattern,
};

const std::map<std::string_view, Kind>& keywords() {
  static const std::map<std::string_view, Kind> table = {
      {"$schema", Kind::dialect},
      {"$id", Kind::root_annotation},
      {"$comment", Kind::annotation},
      {"title", Kind::annotation},
      {"description", Kind::annotation},
      {"default", Kind::annotation},
      {"examples", Kind::annotation},
      {"format", Kind::annotation},
      {"deprecated", Kind::annotation},
      {"readOnly", Kind::annotation},
      {"writeOnly", Kind::annotation},
      {"$defs", Kind::schema_map},
      {"$ref", Kind::ref},
      {"type", Kind::type},
      {"enum", Kind::array},
      {"const", Kind::any_value},
      {"properties", Kind::schema_map},
      {"patternProperties", Kind::schema_map},
      {"additionalProperties", Kind::schema},
      {"propertyNames", Kind::schema},
      {"required", Kind::unique_strings},
      {"minProperties", Kind::count},
      {"maxProperties", Kind::count},
      {"prefixItems", Kind::schema_list},
      {"items", Kind::schema},
      {"minItems", Kind::count},
      {"maxItems", Kind::count},
      {"uniqueItems", Kind::boolean},
      {"minimum", Kind::number},
      {"maximum", Kind::number},
      {"exclusiveMinimum", Kind::number},
      {"exclusiveMaximum", Kind::number},
      {"multipleOf", Kind::positive_number},
      {"minLength", Kind::count},
      {"maxLength", Kind::count},
      {"pattern", Kind::pattern},
      {"allOf", Kind::in_place_list},
      {"anyOf", Kind::in_place_list},
      {"oneOf", Kind::in_place_list},
      {"not", Kind::in_place},
      {"if", Kind::in_place},
      {"then", Kind::in_place},
      {"else", Kind::in_place},
  };
  return table;
}

// Checks a whole schema, compiles its patterns and resolves its references.
// Schema locations are JSON pointers ("" for the root, "/properties/a").
class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, std::map<std::string, Regex>& patterns,
                 std::map<std::string, Pointer>& targets)
      : root_(root), patterns_(patterns), targets_(targets) {}

  void compile() {
    walk(root_, "");
    for (const auto& [ref, where] : refs_) resolve(ref, where);
    for (const auto& entry : in_place_) {
      if (!state_.contains(entry.first)) visit(entry.first);
    }
  }

 private:
  void walk(const Json& schema, const std::string& where) {
    schemas_.insert(where);
    if (schema.is_boolean()) return;
    if (!schema.is_object()) fail(where, "a schema must be an object or a boolean, " + got(schema));
    for (const auto& item : schema.items()) {
      const std::string& keyword = item.key();
      const Json& value = item.value();
      const std::string at = where + "/" + escape_token(keyword);
      const auto kind = keywords().find(keyword);
      if (kind == keywords().end()) {
        fail(where, "unsupported keyword \"" + keyword +
                        "\" (only a subset of Draft 2020-12 is implemented, see harness/scenario/json_schema.hpp)");
      }
      switch (kind->second) {
        case Kind::annotation:
        case Kind::any_value:
          break;
        case Kind::dialect:
          if (value != "https://json-schema.org/draft/2020-12/schema" &&
              value != "https://json-schema.org/draft/2020-12/schema#") {
            fail(at, "only Draft 2020-12 (\"https://json-schema.org/draft/2020-12/schema\") is supported");
          }
          [[fallthrough]];
        case Kind::root_annotation:
          if (!where.empty()) fail(at, "only allowed at the root of the schema");
          break;
        case Kind::ref:
          if (!value.is_string() || !value.get_ref<const std::string&>().starts_with('#')) {
            fail(at, "must be a reference within this schema (\"#/...\")");
          }
          refs_.emplace_back(value.get<std::string>(), where);
          break;
        case Kind::type:
          check_type_names(value, at);
          break;
        case Kind::array:
          if (!value.is_array()) fail(at, "must be an array");
          break;
        case Kind::schema:
          walk(value, at);
          break;
        case Kind::in_place:
          walk(value, at);
          in_place_[where].push_back(at);
          break;
        case Kind::schema_map:
          if (!value.is_object()) fail(at, "must be an object of schemas");
          for (const auto& member : value.items()) {
            if (keyword == "patternProperties") compile_pattern(member.key(), at);
            walk(member.value(), at + "/" + escape_token(member.key()));
          }
          break;
        case Kind::schema_list:
        case Kind::in_place_list:
          if (!value.is_array() || value.empty()) fail(at, "must be a non-empty array of schemas");
          for (std::size_t i = 0; i < value.size(); ++i) {
            const std::string branch = at + "/" + std::to_string(i);
            walk(value[i], branch);
            if (kind->second == Kind::in_place_list) in_place_[where].push_back(branch);
          }
          break;
        case Kind::count:
          if (!is_integer_valued(value) || value.get<double>() < 0) fail(at, "must be a non-negative integer");
          break;
        case Kind::number:
          if (!value.is_number()) fail(at, "must be a number");
          break;
        case Kind::positive_number:
          if (!value.is_number() || as_long_double(value) <= 0) fail(at, "must be a number > 0");
          break;
        case Kind::boolean:
          if (!value.is_boolean()) fail(at, "must be true or false");
          break;
        case Kind::unique_strings:
          check_unique_strings(value, at);
          break;
        case Kind::pattern:
          if (!value.is_string()) fail(at, "must be a string");
          compile_pattern(value.get<std::string>(), at);
          break;
      }
    }
  }

  static void check_type_names(const Json& type, const std::string& at) {
    const bool listed = type.is_array() && !type.empty() &&
                        std::all_of(type.begin(), type.end(), [](const Json& t) { return t.is_string(); });
    if (!type.is_string() && !listed) fail(at, "must be a type name or a non-empty array of them");
    const std::vector<std::string> names = type_list(type);
    for (const std::string& name : names) {
      if (std::find(std::begin(kTypeNames), std::end(kTypeNames), name) == std::end(kTypeNames)) {
        fail(at, "unknown type " + render(Json(name)));
      }
    }
    if (std::set<std::string>(names.begin(), names.end()).size() != names.size()) {
      fail(at, "lists a type twice");
    }
  }

  static void check_unique_strings(const Json& value, const std::string& at) {
    if (!value.is_array()) fail(at, "must be an array of strings");
    std::set<std::string> seen;
    for (const Json& name : value) {
      if (!name.is_string()) fail(at, "must be an array of strings");
      if (!seen.insert(name.get<std::string>()).second) fail(at, "lists " + render(name) + " twice");
    }
  }

  void compile_pattern(const std::string& source, const std::string& at) {
    if (patterns_.contains(source)) return;
    try {
      patterns_.emplace(source, Regex(source));
    } catch (const RegexError& error) {
      fail(at, error.what());
    }
  }

  void resolve(const std::string& ref, const std::string& where) {
    const std::string at = where + "/$ref";
    std::string target;
    try {
      target = Pointer(percent_decode(std::string_view(ref).substr(1), at)).to_string();
    } catch (const Json::exception&) {
      fail(at, render(Json(ref)) + " is not a JSON pointer");
    }
    if (!schemas_.contains(target)) fail(at, render(Json(ref)) + " does not point to a subschema");
    targets_.emplace(ref, Pointer(target));
    in_place_[where].push_back(target);
  }

  // Depth-first search for a cycle of $ref and in-place subschemas, which would
  // make validation recurse forever without descending into the document.
  void visit(const std::string& location) {
    state_[location] = Visit::open;
    path_.push_back(location);
    for (const std::string& next : in_place_[location]) {
      if (!state_.contains(next)) {
        visit(next);
      } else if (state_[next] == Visit::open) {
        std::string cycle;
        for (auto step = std::find(path_.begin(), path_.end(), next); step != path_.end(); ++step) {
          cycle += "#" + *step + " -> ";
        }
        fail(location, "$ref cycle that never descends into the document: " + cycle + "#" + next);
      }
    }
    path_.pop_back();
    state_[location] = Visit::done;
  }

  enum class Visit { open, done };

  const Json& root_;
  std::map<std::string, Regex>& patterns_;
  std::map<std::string, Pointer>& targets_;
  std::set<std::string> schemas_;                              // every subschema's location
  std::vector<std::pair<std::string, std::string>> refs_;      // $ref value, location
  std::map<std::string, std::vector<std::string>> in_place_;   // schema -> schemas applied with it
  std::map<std::string, Visit> state_;
  std::vector<std::string> path_;
};

// ---- Validation ----

// The keywords validation reads, in SchemaNode::keywords's order.
enum class Keyword {
  type, ref, enum_, const_, required, min_properties, max_properties, properties, pattern_properties,
  additional_properties, property_names, min_items, max_items, unique_items, prefix_items, items, minimum, maximum,
  exclusive_minimum, exclusive_maximum, multiple_of, min_length, max_length, pattern, all_of, any_of, one_of, not_,
  if_, then_, else_, description, count
};
constexpr const char* kKeywordNames[] = {
    "type", "$ref", "enum", "const", "required", "minProperties", "maxProperties", "properties", "patternProperties",
    "additionalProperties", "propertyNames", "minItems", "maxItems", "uniqueItems", "prefixItems", "items", "minimum",
    "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "allOf",
    "anyOf", "oneOf", "not", "if", "then", "else", "description"};
static_assert(std::size(kKeywordNames) == static_cast<std::size_t>(Keyword::count), "a name for every keyword");

}  // namespace

struct SchemaNode {
  std::array<const Json*, static_cast<std::size_t>(Keyword::count)> keywords{};
  std::unordered_map<std::string_view, const Json*> properties;  // the members of "properties", by name
};

namespace {

// Indexes `value` and every object below it.
void index_nodes(const Json& value, std::unordered_map<const Json*, std::unique_ptr<SchemaNode>>& nodes) {
  if (value.is_array()) {
    for (const Json& element : value) index_nodes(element, nodes);
  }
  if (!value.is_object()) return;
  auto node = std::make_unique<SchemaNode>();
  for (const auto& [key, member] : value.items()) {
    for (std::size_t k = 0; k < std::size(kKeywordNames); ++k) {
      if (key == kKeywordNames[k]) node->keywords[k] = &member;
    }
    index_nodes(member, nodes);
  }
  if (const Json* properties = node->keywords[static_cast<std::size_t>(Keyword::properties)];
      properties != nullptr && properties->is_object()) {
    for (const auto& [name, property] : properties->items()) node->properties.emplace(name, &property);
  }
  nodes.emplace(&value, std::move(node));
}

// "unknown key; allowed keys: a, b, keys matching ^x- (did you mean "b"?)"
std::string unknown_key(const std::string& key, const Json* properties, const Json* pattern_properties) {
  std::vector<std::string> names;
  if (properties != nullptr) {
    for (const auto& property : properties->items()) names.push_back(property.key());
  }
  std::vector<std::string> allowed = names;
  if (pattern_properties != nullptr) {
    for (const auto& pattern : pattern_properties->items()) allowed.push_back("keys matching " + pattern.key());
  }
  if (allowed.empty()) return "unknown key; no keys are allowed here";
  return "unknown key; allowed keys: " + join(allowed, ", ") + did_you_mean(key, names);
}

class Validator {
 public:
  Validator(const Json& root, const std::map<std::string, Regex>& patterns,
            const std::map<std::string, Pointer>& targets,
            const std::unordered_map<const Json*, std::unique_ptr<SchemaNode>>& nodes)
      : root_(root), patterns_(patterns), targets_(targets), nodes_(nodes) {}

  void check(const Json& schema, const Json& value, const Location& at, Findings& out) const {
    if (out.size() >= kMaxSchemaErrors) {  // enough to act on; the rest of the document is not walked
      truncated_ = true;
      return;
    }
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) report(out, at, "no value is allowed here");
      return;
    }
    const Json* type = find(schema, Keyword::type);
    if (type != nullptr && !matches_type(*type, value)) {
      report(out, at, "expected " + describe_types(*type) + ", " + got(value));
    } else {
      check_allowed_values(schema, value, at, out);  // not repeated when the type is wrong
    }
    if (const Json* ref = find(schema, Keyword::ref)) check(target(*ref), value, at, out);
    if (value.is_object()) check_object(schema, value, at, out);
    if (value.is_array()) check_array(schema, value, at, out);
    if (value.is_number()) check_number(schema, value, at, out);
    if (value.is_string()) check_string(schema, value, at, out);
    check_subschemas(schema, value, at, out);
  }

 private:
  const Json& target(const Json& ref) const { return root_.at(targets_.at(ref.get<std::string>())); }

  bool passes(const Json& schema, const Json& value) const {
    Findings findings;
    check(schema, value, Location{}, findings);
    return findings.empty();
  }

  void check_allowed_values(const Json& schema, const Json& value, const Location& at, Findings& out) const {
    if (const Json* allowed = find(schema, Keyword::enum_)) {
      const auto equal = [&](const Json& candidate) { return same_value(candidate, value); };
      if (std::none_of(allowed->begin(), allowed->end(), equal)) {
        std::vector<std::string> strings;
        for (const Json& candidate : *allowed) {
          if (candidate.is_string()) strings.push_back(candidate.get<std::string>());
        }
        report(out, at,
               allowed->empty() ? render(value) + " is not allowed; the schema allows no value here"
                                : render(value) + " is not allowed; allowed " +
                                      (allowed->size() == 1 ? "value: " : "values: ") + list_values(*allowed) +
                                      (value.is_string() ? did_you_mean(value.get<std::string>(), strings) : ""));
      }
    }
    if (const Json* only = find(schema, Keyword::const_); only != nullptr && !same_value(*only, value)) {
      report(out, at, render(value) + " is not allowed; allowed value: " + render(*only));
    }
  }

  void check_object(const Json& schema, const Json& object, const Location& at, Findings& out) const {
    if (const Json* required = find(schema, Keyword::required)) {
      for (const Json& name : *required) {
        if (!object.contains(name.get<std::string>())) report(out, at, "missing required key " + render(name));
      }
    }
    if (const Json* min = find(schema, Keyword::min_properties); min != nullptr && object.size() < count_limit(*min)) {
      report(out, at, "must have at least " + count_of(count_limit(*min), "key") + ", got " +
                          std::to_string(object.size()));
    }
    if (const Json* max = find(schema, Keyword::max_properties); max != nullptr && object.size() > count_limit(*max)) {
      report(out, at, "must have at most " + count_of(count_limit(*max), "key") + ", got " +
                          std::to_string(object.size()));
    }
    const Json* properties = find(schema, Keyword::properties);
    const Json* pattern_properties = find(schema, Keyword::pattern_properties);
    const Json* additional = find(schema, Keyword::additional_properties);
    const Json* names = find(schema, Keyword::property_names);
    std::size_t position = 0;
    for (const auto& member : object.items()) {
      const std::string& key = member.key();
      const Location here = at.member(key, position++);
      bool declared = false;
      if (const Json* declared_as = property(schema, key)) {
        declared = true;
        check(*declared_as, member.value(), here, out);
      }
      if (pattern_properties != nullptr) {
        for (const auto& pattern : pattern_properties->items()) {
          if (patterns_.at(pattern.key()).search(key)) {
            declared = true;
            check(pattern.value(), member.value(), here, out);
          }
        }
      }
      if (!declared && additional != nullptr) {
        if (*additional == false) {
          report(out, here, unknown_key(key, properties, pattern_properties));
        } else {
          check(*additional, member.value(), here, out);
        }
      }
      if (names != nullptr) {
        Findings problems;
        check(*names, Json(key), here, problems);
        for (Finding& problem : problems) report(out, here, "invalid key: " + problem.error.message);
      }
    }
  }

  void check_array(const Json& schema, const Json& array, const Location& at, Findings& out) const {
    if (const Json* min = find(schema, Keyword::min_items); min != nullptr && array.size() < count_limit(*min)) {
      report(out, at, "must have at least " + count_of(count_limit(*min), "item") + ", got " +
                          std::to_string(array.size()));
    }
    if (const Json* max = find(schema, Keyword::max_items); max != nullptr && array.size() > count_limit(*max)) {
      report(out, at, "must have at most " + count_of(count_limit(*max), "item") + ", got " +
                          std::to_string(array.size()));
    }
    if (const Json* unique = find(schema, Keyword::unique_items); unique != nullptr && *unique == true) {
      std::map<std::string, std::size_t> first_of;  // canonical form -> first index with it
      for (std::size_t j = 0; j < array.size(); ++j) {
        const auto [first, inserted] = first_of.emplace(canonical_form(array[j]), j);
        if (!inserted) {
          report(out, at, "items must be unique, but [" + std::to_string(first->second) + "] and [" +
                              std::to_string(j) + "] are equal (" + render(array[j]) + ")");
        }
      }
    }
    const Json* prefix = find(schema, Keyword::prefix_items);
    const Json* items = find(schema, Keyword::items);
    const std::size_t prefix_size = prefix != nullptr ? prefix->size() : 0;
    for (std::size_t i = 0; i < array.size(); ++i) {
      if (i < prefix_size) {
        check((*prefix)[i], array[i], at.element(i), out);
      } else if (items != nullptr) {
        check(*items, array[i], at.element(i), out);
      }
    }
  }

  void check_number(const Json& schema, const Json& number, const Location& at, Findings& out) const {
    struct Bound {
      Keyword keyword;
      const char* relation;
      bool (*holds)(int comparison);  // of the number with the bound
    };
    static constexpr Bound kBounds[] = {
        {Keyword::minimum, ">=", [](int c) { return c >= 0; }},
        {Keyword::maximum, "<=", [](int c) { return c <= 0; }},
        {Keyword::exclusive_minimum, ">", [](int c) { return c > 0; }},
        {Keyword::exclusive_maximum, "<", [](int c) { return c < 0; }},
    };
    for (const Bound& bound : kBounds) {
      const Json* limit = find(schema, bound.keyword);
      if (limit != nullptr && !bound.holds(compare_numbers(number, *limit))) {
        report(out, at, std::string("must be ") + bound.relation + " " + render(*limit) + ", got " + render(number));
      }
    }
    if (const Json* divisor = find(schema, Keyword::multiple_of); divisor != nullptr && !is_multiple_of(number, *divisor)) {
      report(out, at, "must be a multiple of " + render(*divisor) + ", got " + render(number));
    }
  }

  void check_string(const Json& schema, const Json& string, const Location& at, Findings& out) const {
    const std::string& text = string.get_ref<const std::string&>();
    const std::uint64_t length = code_points(text);
    if (const Json* min = find(schema, Keyword::min_length); min != nullptr && length < count_limit(*min)) {
      report(out, at, "must have at least " + count_of(count_limit(*min), "character") + ", got " +
                          std::to_string(length));
    }
    if (const Json* max = find(schema, Keyword::max_length); max != nullptr && length > count_limit(*max)) {
      report(out, at, "must have at most " + count_of(count_limit(*max), "character") + ", got " +
                          std::to_string(length));
    }
    if (const Json* pattern = find(schema, Keyword::pattern)) {
      const std::string& source = pattern->get_ref<const std::string&>();
      if (!patterns_.at(source).search(text)) {
        report(out, at, render(string) + " does not match the pattern " + shorten(source, kQuoteWidth));
      }
    }
  }

  void check_subschemas(const Json& schema, const Json& value, const Location& at, Findings& out) const {
    if (const Json* all = find(schema, Keyword::all_of)) {
      for (const Json& branch : *all) check(branch, value, at, out);
    }
    // A branch whose type cannot admit the value fails without being walked
    // (report_no_match needs the findings only of a branch that admits it).
    if (const Json* any = find(schema, Keyword::any_of)) {
      std::vector<Findings> failures;
      bool matched = false;
      for (const Json& branch : *any) {
        Findings findings;
        if (admits_type(branch, value)) {
          check(branch, value, at, findings);
          if (findings.empty()) {
            matched = true;
            break;
          }
        }
        failures.push_back(std::move(findings));
      }
      if (!matched) report_no_match(*any, failures, value, at, out);
    }
    if (const Json* one = find(schema, Keyword::one_of)) {
      std::vector<Findings> failures;
      std::vector<std::string> matched;
      for (const Json& branch : *one) {
        Findings findings;
        if (admits_type(branch, value)) {
          check(branch, value, at, findings);
          if (findings.empty()) matched.push_back(describe(branch));
        }
        failures.push_back(std::move(findings));
      }
      if (matched.empty()) report_no_match(*one, failures, value, at, out);
      if (matched.size() > 1) {
        report(out, at, "must match exactly one allowed form, but matches " + std::to_string(matched.size()) +
                            ": " + join(matched, " | "));
      }
    }
    if (const Json* negated = find(schema, Keyword::not_); negated != nullptr && passes(*negated, value)) {
      report(out, at, "must not be " + describe(*negated));
    }
    if (const Json* condition = find(schema, Keyword::if_)) {
      if (const Json* branch = find(schema, passes(*condition, value) ? Keyword::then_ : Keyword::else_)) {
        check(*branch, value, at, out);
      }
    }
  }

  // One message for an anyOf or oneOf that no branch accepts: the errors of the
  // only branch meant for the value's type, else a list of the allowed forms.
  void report_no_match(const Json& branches, std::vector<Findings>& failures, const Json& value,
                       const Location& at, Findings& out) const {
    std::vector<std::size_t> fitting;
    for (std::size_t i = 0; i < branches.size(); ++i) {
      if (admits_type(branches[i], value)) fitting.push_back(i);
    }
    if (fitting.size() == 1) {
      Findings& chosen = failures[fitting.front()];
      out.insert(out.end(), std::make_move_iterator(chosen.begin()), std::make_move_iterator(chosen.end()));
      return;
    }
    std::vector<std::string> forms;
    for (const Json& branch : branches) forms.push_back(describe(branch));
    report(out, at, "does not match any allowed form: " + join(forms, " | ") + " (" + got(value) + ")");
  }

  // Whether a schema's "type", "enum" and "const" (through $ref) admit the value's JSON type.
  bool admits_type(const Json& schema, const Json& value) const {
    if (schema.is_boolean()) return schema.get<bool>();
    const auto kind_of_value = [&](const Json& candidate) { return same_kind(candidate, value); };
    if (const Json* type = find(schema, Keyword::type); type != nullptr && !matches_type(*type, value)) return false;
    if (const Json* only = find(schema, Keyword::const_); only != nullptr && !same_kind(*only, value)) return false;
    if (const Json* allowed = find(schema, Keyword::enum_);
        allowed != nullptr && std::none_of(allowed->begin(), allowed->end(), kind_of_value)) {
      return false;
    }
    if (const Json* ref = find(schema, Keyword::ref)) return admits_type(target(*ref), value);
    return true;
  }

  // A short phrase for what a schema accepts: its description, else its const,
  // enum or type, else that of its $ref, else the schema itself.
  std::string describe(const Json& schema) const {
    if (schema.is_boolean()) return schema.get<bool>() ? "any value" : "no value";
    if (const Json* description = find(schema, Keyword::description); description != nullptr && description->is_string()) {
      return shorten(description->get<std::string>(), kDescriptionWidth);
    }
    if (const Json* only = find(schema, Keyword::const_)) return render(*only);
    if (const Json* allowed = find(schema, Keyword::enum_)) return "one of " + list_values(*allowed);
    if (const Json* type = find(schema, Keyword::type)) return describe_types(*type);
    if (const Json* ref = find(schema, Keyword::ref)) return describe(target(*ref));
    return render(schema);
  }

  // The index entry of a schema object, or nullptr; the last one found is
  // kept, as a value's checks ask the same schema for keyword after keyword.
  const SchemaNode* node_of(const Json& schema) const {
    if (&schema != last_schema_) {
      const auto found = nodes_.find(&schema);
      last_schema_ = &schema;
      last_node_ = found == nodes_.end() ? nullptr : found->second.get();
    }
    return last_node_;
  }
  // The schema object's keyword, or nullptr.
  const Json* find(const Json& schema, Keyword keyword) const {
    const SchemaNode* node = node_of(schema);
    return node == nullptr ? nullptr : node->keywords[static_cast<std::size_t>(keyword)];
  }
  // The schema of member `key` under the object schema's "properties", or nullptr.
  const Json* property(const Json& schema, const std::string& key) const {
    const SchemaNode* node = node_of(schema);
    if (node == nullptr) return nullptr;
    const auto found = node->properties.find(key);
    return found == node->properties.end() ? nullptr : found->second;
  }

  const Json& root_;
  const std::map<std::string, Regex>& patterns_;
  const std::map<std::string, Pointer>& targets_;
  const std::unordered_map<const Json*, std::unique_ptr<SchemaNode>>& nodes_;
  mutable const Json* last_schema_ = nullptr;
  mutable const SchemaNode* last_node_ = nullptr;
  mutable bool truncated_ = false;

 public:
  bool truncated() const { return truncated_; }
};

}  // namespace

std::string format_error(const SchemaError& error) {
  return (error.path.empty() ? "(root)" : error.path) + ": " + error.message;
}

JsonSchema::JsonSchema(nlohmann::ordered_json schema) : schema_(std::move(schema)) {
  SchemaCompiler(schema_, patterns_, targets_).compile();
  index_nodes(schema_, nodes_);
}

JsonSchema::~JsonSchema() = default;

std::vector<SchemaError> JsonSchema::validate(const nlohmann::ordered_json& document) const {
  Findings findings;
  const Validator validator(schema_, patterns_, targets_, nodes_);
  validator.check(schema_, document, Location{}, findings);
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.order < b.order; });
  std::vector<SchemaError> errors;
  std::set<std::pair<std::string, std::string>> seen;
  for (Finding& finding : findings) {
    if (seen.emplace(finding.error.path, finding.error.message).second) errors.push_back(std::move(finding.error));
  }
  if (validator.truncated()) {
    errors.insert(errors.begin(), SchemaError{"", "has more problems than the " + std::to_string(kMaxSchemaErrors) +
                                                      " below; the rest of the document was not checked"});
  }
  return errors;
}

}  // namespace attnbench
