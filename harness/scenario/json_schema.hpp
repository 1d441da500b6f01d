// A JSON Schema validator that reports every violation in a document at once,
// each with the key path and a message meant for the person who wrote it.
//
// Scenario files are checked against a schema shipped in scenarios/ (and results
// files against another one in the tests), so a typo or an out-of-range value is
// reported up front instead of falling back to a default. Only the part of
// Draft 2020-12 those schemas need is implemented, with the standard's semantics,
// so a schema gives the same verdict here as in Python's jsonschema
// (Draft202012Validator):
//   annotations (ignored): $schema, $id (root only), $comment, title, description,
//     default, examples, format, deprecated, readOnly, writeOnly
//   references: $defs, $ref (local JSON pointers "#/..." to a subschema)
//   any value: type, enum, const, allOf, anyOf, oneOf, not, if/then/else
//   objects: properties, patternProperties, additionalProperties, propertyNames,
//     required, minProperties, maxProperties
//   arrays: prefixItems, items, minItems, maxItems, uniqueItems
//   numbers: minimum, maximum, exclusiveMinimum, exclusiveMaximum, multipleOf
//   strings: minLength, maxLength (in code points), pattern (ECMAScript syntax,
//     searched in linear time by RE2: harness/scenario/regex.hpp)
// The constructor rejects any other keyword, a malformed keyword value, a $ref
// that does not resolve to a subschema and a $ref cycle that never descends into
// the document, so a schema can never hold a constraint that is silently ignored.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/scenario/regex.hpp"

namespace attnbench {

inline constexpr std::size_t kMaxSchemaErrors = 1000;

struct SchemaError {
  // "" for the document root; keys joined with '.', array indices as [n]
  // ("cases[1].mask.window"); a key that is not plain ([A-Za-z0-9_$-]+) or is
  // longer than kQuoteWidth is written as ["key"] with JSON escapes, shortened.
  std::string path;
  std::string message;  // without the path

  friend bool operator==(const SchemaError&, const SchemaError&) = default;
};

// "path: message", or "(root): message" for an error about the whole document.
std::string format_error(const SchemaError& error);

// A schema object's keywords, looked up once when the schema is compiled
// (json_schema.cpp), so validation never searches an object's keys by name.
struct SchemaNode;

class JsonSchema {
 public:
  // Throws std::invalid_argument, naming the keyword and its location in the
  // schema ("#/properties/x"), for anything the validator cannot enforce exactly.
  explicit JsonSchema(nlohmann::ordered_json schema);
  // The index points into the schema it owns: neither copied nor moved.
  JsonSchema(const JsonSchema&) = delete;
  JsonSchema& operator=(const JsonSchema&) = delete;
  ~JsonSchema();

  // Every violation, in document order (an object's own errors before those of
  // its members), each path and message at most once. Empty when it is valid.
  // A document with more than kMaxSchemaErrors gets the first ones found,
  // after an error at the root saying the rest was not checked, so validating
  // a huge broken document costs no more than a few thousand messages.
  std::vector<SchemaError> validate(const nlohmann::ordered_json& document) const;

 private:
  nlohmann::ordered_json schema_;
  std::map<std::string, Regex> patterns_;                                // by source text
  std::map<std::string, nlohmann::ordered_json::json_pointer> targets_;  // by $ref value
  std::unordered_map<const nlohmann::ordered_json*, std::unique_ptr<SchemaNode>> nodes_;  // every object in schema_
};

}  // namespace attnbench
