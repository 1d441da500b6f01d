// The JSON Schema validator: every keyword's verdicts, the paths and messages of
// its errors, and the schemas its constructor refuses.
#include "harness/scenario/json_schema.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

std::vector<std::string> errors_of(const Json& schema, const Json& document) {
  std::vector<std::string> lines;
  for (const SchemaError& error : JsonSchema(schema).validate(document)) lines.push_back(format_error(error));
  return lines;
}

// The message of the constructor's exception, or "" when it accepts the schema.
std::string rejection_of(const Json& schema) {
  try {
    JsonSchema{schema};
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

struct KeywordCase {
  const char* keyword;
  const char* schema;
  const char* accepted;  // a document the schema accepts
  const char* rejected;  // a document it rejects, with exactly the error below
  const char* error;
};

// Every supported keyword accepts one instance and rejects another.
const KeywordCase kKeywordCases[] = {
    {"type null", R"({"type": "null"})", "null", "0", R"((root): expected null, got an integer (0))"},
    {"type boolean", R"({"type": "boolean"})", "false", "\"true\"",
     R"((root): expected a boolean, got a string ("true"))"},
    {"type object", R"({"type": "object"})", "{}", "[]", "(root): expected an object, got an array ([])"},
    {"type array", R"({"type": "array"})", "[1]", "{}", "(root): expected an array, got an object ({})"},
    {"type number", R"({"type": "number"})", "2.5", "null", "(root): expected a number, got null"},
    {"type integer", R"({"type": "integer"})", "-3", "true", "(root): expected an integer, got a boolean (true)"},
    {"type string", R"({"type": "string"})", "\"\"", "1.5", "(root): expected a string, got a number (1.5)"},
    {"type list", R"({"type": ["string", "integer", "null"]})", "7", "[]",
     "(root): expected a string, an integer or null, got an array ([])"},
    {"enum", R"({"enum": ["fp16", "bf16", 1]})", "1.0", "\"fp32\"",
     R"((root): "fp32" is not allowed; allowed values: "fp16", "bf16", 1)"},
    {"const", R"({"const": {"a": 1, "b": [2]}})", R"({"b": [2.0], "a": 1})", R"({"a": 1})",
     R"((root): {"a":1} is not allowed; allowed value: {"a":1,"b":[2]})"},
    {"properties", R"({"properties": {"n": {"type": "integer"}}})", R"({"n": 1, "other": "x"})", R"({"n": "1"})",
     R"(n: expected an integer, got a string ("1"))"},
    {"required", R"({"required": ["a", "b"]})", R"({"a": 0, "b": 0})", R"({"b": 0})",
     R"((root): missing required key "a")"},
    {"additionalProperties false", R"({"properties": {"a": {}}, "additionalProperties": false})", R"({"a": 1})",
     R"({"a": 1, "zzz": 2})", "zzz: unknown key; allowed keys: a"},
    {"additionalProperties schema", R"({"properties": {"a": {}}, "additionalProperties": {"type": "string"}})",
     R"({"a": 1, "b": "x"})", R"({"a": 1, "b": 2})", "b: expected a string, got an integer (2)"},
    {"propertyNames", R"({"propertyNames": {"pattern": "^[a-z_]+$"}})", R"({"head_dim": 1})", R"({"HeadDim": 1})",
     R"(HeadDim: invalid key: "HeadDim" does not match the pattern ^[a-z_]+$)"},
    {"minProperties", R"({"minProperties": 1})", R"({"a": 1})", "{}", "(root): must have at least 1 key, got 0"},
    {"maxProperties", R"({"maxProperties": 1})", R"({"a": 1})", R"({"a": 1, "b": 2})",
     "(root): must have at most 1 key, got 2"},
    {"patternProperties", R"({"patternProperties": {"^x_": {"type": "number"}}, "additionalProperties": false})",
     R"({"x_scale": 1.5})", R"({"x_scale": "big"})", R"(x_scale: expected a number, got a string ("big"))"},
    {"items", R"({"items": {"type": "integer"}})", "[1, 2]", R"([1, "2"])",
     R"([1]: expected an integer, got a string ("2"))"},
    {"prefixItems", R"({"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false})", R"(["a", 1])",
     R"(["a", 1, 2])", "[2]: no value is allowed here"},
    {"minItems", R"({"minItems": 2})", "[1, 2]", "[1]", "(root): must have at least 2 items, got 1"},
    {"maxItems", R"({"maxItems": 1})", "[1]", "[1, 2]", "(root): must have at most 1 item, got 2"},
    {"uniqueItems", R"({"uniqueItems": true})", R"([1, "1", [1]])", R"([{"a": 1, "b": 2}, 3, {"b": 2, "a": 1.0}])",
     R"((root): items must be unique, but [0] and [2] are equal ({"b":2,"a":1.0}))"},
    {"minimum", R"({"minimum": 1})", "1", "0.5", "(root): must be >= 1, got 0.5"},
    {"maximum", R"({"maximum": 8})", "8", "9", "(root): must be <= 8, got 9"},
    {"exclusiveMinimum", R"({"exclusiveMinimum": 0})", "0.001", "0", "(root): must be > 0, got 0"},
    {"exclusiveMaximum", R"({"exclusiveMaximum": 1.0})", "0.999", "1", "(root): must be < 1.0, got 1"},
    {"multipleOf integer", R"({"multipleOf": 8})", "-64", "12", "(root): must be a multiple of 8, got 12"},
    {"multipleOf number", R"({"multipleOf": 0.5})", "2.5", "2.25", "(root): must be a multiple of 0.5, got 2.25"},
    {"minLength", R"({"minLength": 3})", "\"h\u00e9h\"", "\"\u00e9\u00e9\"",
     "(root): must have at least 3 characters, got 2"},
    {"maxLength", R"({"maxLength": 2})", "\"\u00e9\u00e9\"", "\"abc\"",
     "(root): must have at most 2 characters, got 3"},
    {"pattern", R"({"pattern": "b+c"})", "\"abbcd\"", "\"ac\"", R"((root): "ac" does not match the pattern b+c)"},
    {"allOf", R"({"allOf": [{"minimum": 0}, {"maximum": 10}]})", "5", "11", "(root): must be <= 10, got 11"},
    {"anyOf", R"({"anyOf": [{"type": "integer"}, {"const": "auto"}]})", "\"auto\"", "\"manual\"",
     R"((root): "manual" is not allowed; allowed value: "auto")"},
    {"oneOf", R"({"oneOf": [{"type": "integer"}, {"minimum": 5}]})", "2", "7",
     "(root): must match exactly one allowed form, but matches 2: an integer | {\"minimum\":5}"},
    {"not", R"({"not": {"const": 0}})", "1", "0", "(root): must not be 0"},
    {"if then", R"({"if": {"minimum": 100}, "then": {"multipleOf": 64}, "else": {"multipleOf": 8}})", "128", "136",
     "(root): must be a multiple of 64, got 136"},
    {"if else", R"({"if": {"minimum": 100}, "then": {"multipleOf": 64}, "else": {"multipleOf": 8}})", "24", "20",
     "(root): must be a multiple of 8, got 20"},
    {"$ref", R"({"$defs": {"positive": {"exclusiveMinimum": 0}}, "$ref": "#/$defs/positive"})", "3", "-3",
     "(root): must be > 0, got -3"},
    {"false schema", R"({"properties": {"gone": false}})", R"({"kept": 1})", R"({"gone": 1})",
     "gone: no value is allowed here"},
};

TEST(JsonSchemaKeywords, EveryKeywordAcceptsOneInstanceAndRejectsAnother) {
  for (const KeywordCase& c : kKeywordCases) {
    SCOPED_TRACE(c.keyword);
    const Json schema = Json::parse(c.schema);
    EXPECT_EQ(errors_of(schema, Json::parse(c.accepted)), std::vector<std::string>{});
    EXPECT_EQ(errors_of(schema, Json::parse(c.rejected)), std::vector<std::string>{c.error});
  }
}

TEST(JsonSchemaKeywords, IntegerAcceptsIntegralFloatsOnly) {
  const Json schema = {{"type", "integer"}};
  EXPECT_TRUE(JsonSchema(schema).validate(Json::parse("2.0")).empty());
  EXPECT_TRUE(JsonSchema(schema).validate(Json::parse("-1e3")).empty());
  EXPECT_TRUE(JsonSchema(schema).validate(Json::parse("18446744073709551615")).empty());
  EXPECT_EQ(errors_of(schema, Json::parse("2.5")),
            std::vector<std::string>{"(root): expected an integer, got a number (2.5)"});
}

TEST(JsonSchemaKeywords, PatternSearchesAnywhereUnlessAnchored) {
  const Json schema = {{"pattern", "^b"}};
  EXPECT_TRUE(JsonSchema(schema).validate("bc").empty());
  EXPECT_FALSE(JsonSchema(schema).validate("abc").empty());
  EXPECT_TRUE(JsonSchema(Json{{"pattern", "b"}}).validate("abc").empty());
}

TEST(JsonSchemaKeywords, PatternIsLinearTimeAndUtf8Aware) {
  // std::regex overflowed the stack on strings of some 20k characters.
  const JsonSchema alternatives(Json{{"pattern", "^(a|b)*$"}});
  EXPECT_TRUE(alternatives.validate(std::string(1 << 20, 'a')).empty());
  EXPECT_FALSE(alternatives.validate(std::string(1 << 20, 'a') + "c").empty());
  EXPECT_TRUE(JsonSchema(Json{{"pattern", "^.$"}}).validate("\xC3\xA9").empty()) << "one code point";
  const JsonSchema keys(Json{{"patternProperties", {{"^x-.*z$", {{"type", "integer"}}}}}});
  EXPECT_FALSE(keys.validate(Json{{"x-" + std::string(100000, 'y') + "z", "no"}}).empty());
}

TEST(JsonSchemaKeywords, UniqueItemsScalesToLongArrays) {
  Json items = Json::array();
  for (int i = 0; i < 200000; ++i) items.push_back(i);
  const JsonSchema unique(Json{{"uniqueItems", true}});
  EXPECT_TRUE(unique.validate(items).empty()) << "sorted, not compared pairwise";
  items.push_back(1.0);  // equal to 1 as a number
  items.push_back(Json{{"b", 1}, {"a", 2}});
  items.push_back(Json{{"a", 2}, {"b", 1.0}});  // equal regardless of key order
  items.push_back(-0.0);  // equal to 0
  EXPECT_EQ(errors_of(Json{{"uniqueItems", true}}, items),
            (std::vector<std::string>{"(root): items must be unique, but [1] and [200000] are equal (1.0)",
                                      "(root): items must be unique, but [200001] and [200002] are equal ({\"a\":2,\"b\":1.0})",
                                      "(root): items must be unique, but [0] and [200003] are equal (-0.0)"}));
  EXPECT_TRUE(unique.validate(Json::array({1, "1", true, Json::array({1}), nullptr, 1.5})).empty());
}

TEST(JsonSchemaKeywords, AnnotationsAreNotEnforced) {
  const Json schema = Json::parse(R"({
    "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "https://example.org/s.json",
    "$comment": "c", "title": "t", "description": "d", "default": 1, "examples": [1],
    "format": "email", "deprecated": true, "readOnly": true, "writeOnly": false})");
  EXPECT_TRUE(JsonSchema(schema).validate("not an email address").empty());
}

TEST(JsonSchemaKeywords, RefAppliesTogetherWithSiblingKeywords) {
  const Json schema = Json::parse(R"({
    "$defs": {"small": {"maximum": 10}}, "$ref": "#/$defs/small", "minimum": 5})");
  EXPECT_TRUE(JsonSchema(schema).validate(7).empty());
  EXPECT_EQ(errors_of(schema, 11), std::vector<std::string>{"(root): must be <= 10, got 11"});
  EXPECT_EQ(errors_of(schema, 4), std::vector<std::string>{"(root): must be >= 5, got 4"});
}

TEST(JsonSchemaRefs, ResolvesNestedPointersWithEscapes) {
  const Json schema = Json::parse(R"({
    "$defs": {
      "mask": {"type": "object", "properties": {"window": {"type": "integer", "minimum": 1}}},
      "a/b~c": {"type": "string"},
      "with space": {"type": "boolean"}
    },
    "properties": {
      "window": {"$ref": "#/$defs/mask/properties/window"},
      "escaped": {"$ref": "#/$defs/a~1b~0c"},
      "spaced": {"$ref": "#/$defs/with%20space"},
      "whole": {"$ref": "#"}
    }})");
  EXPECT_TRUE(JsonSchema(schema).validate({{"window", 4}, {"escaped", "x"}, {"spaced", true}}).empty());
  EXPECT_EQ(errors_of(schema, {{"window", 0}, {"escaped", 1}, {"spaced", "yes"}, {"whole", {{"window", "w"}}}}),
            (std::vector<std::string>{"window: must be >= 1, got 0",
                                      "escaped: expected a string, got an integer (1)",
                                      R"(spaced: expected a boolean, got a string ("yes"))",
                                      R"(whole.window: expected an integer, got a string ("w"))"}));
}

TEST(JsonSchemaRefs, RecursiveSchemaFollowsTheDocument) {
  const Json schema = Json::parse(R"({
    "$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
                                                         "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    "$ref": "#/$defs/node"})");
  const Json tree = Json::parse(R"({"value": 1, "children": [{"value": 2}, {"children": [{"value": "3"}]}]})");
  EXPECT_EQ(errors_of(schema, tree),
            std::vector<std::string>{R"(children[1].children[0].value: expected an integer, got a string ("3"))"});
}

// A scenario-like schema for the messages the `attnbench validate` command shows.
const char* const kScenarioSchema = R"({
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "defaults": {"$ref": "#/$defs/shape"},
    "sweep": {
      "type": "object", "additionalProperties": false,
      "properties": {"seqlen": {"type": "array", "items": {"type": "integer", "minimum": 1}}}
    },
    "measure": {
      "type": "object", "additionalProperties": false,
      "properties": {"min_samples": {"type": "integer", "minimum": 1}}
    },
    "cases": {"type": "array", "items": {"$ref": "#/$defs/shape", "required": ["batch", "head_dim"]}}
  },
  "$defs": {
    "shape": {
      "type": "object", "additionalProperties": false,
      "properties": {
        "batch": {"type": "integer", "minimum": 1},
        "heads": {"type": "integer", "minimum": 1},
        "head_dim": {"enum": [64, 128]},
        "dtype": {"enum": ["fp16", "bf16"]}
      }
    }
  }})";

TEST(JsonSchemaMessages, ReportsEveryErrorInDocumentOrderWithPaths) {
  const Json document = Json::parse(R"({
    "defaults": {"dtype": "fp8", "hed_dim": 64},
    "sweep": {"seqlen": [512, 1024, "1k", 0]},
    "measure": {"min_samples": 0},
    "cases": [{"batch": 1, "head_dim": 64}, {"batch": 2}],
    "extra": true})");
  EXPECT_EQ(errors_of(Json::parse(kScenarioSchema), document),
            (std::vector<std::string>{
                R"(defaults.dtype: "fp8" is not allowed; allowed values: "fp16", "bf16")",
                R"(defaults.hed_dim: unknown key; allowed keys: batch, heads, head_dim, dtype (did you mean "head_dim"?))",
                R"(sweep.seqlen[2]: expected an integer, got a string ("1k"))",
                "sweep.seqlen[3]: must be >= 1, got 0",
                "measure.min_samples: must be >= 1, got 0",
                R"(cases[1]: missing required key "head_dim")",
                "extra: unknown key; allowed keys: defaults, sweep, measure, cases",
            }));
}

TEST(JsonSchemaMessages, ErrorsCarryPathAndMessageSeparately) {
  const std::vector<SchemaError> errors =
      JsonSchema(Json::parse(kScenarioSchema)).validate(Json::parse(R"({"cases": [{}, {"batch": 1}]})"));
  ASSERT_EQ(errors.size(), 3U);
  EXPECT_EQ(errors[0], (SchemaError{"cases[0]", R"(missing required key "batch")"}));
  EXPECT_EQ(errors[2], (SchemaError{"cases[1]", R"(missing required key "head_dim")"}));
  EXPECT_EQ(format_error(SchemaError{"", "expected an object, got null"}), "(root): expected an object, got null");
}

TEST(JsonSchemaMessages, SuggestsOnlyCloseNames) {
  const Json schema = Json::parse(R"({"properties": {"seqlen_q": {}, "seqlen_k": {}, "dropout": {"enum": ["none", "philox"]}},
                                      "patternProperties": {"^x-": {}}, "additionalProperties": false})");
  EXPECT_EQ(errors_of(schema, {{"droput", "philx"}, {"sequence", 1}}),
            (std::vector<std::string>{
                R"(droput: unknown key; allowed keys: seqlen_q, seqlen_k, dropout, keys matching ^x- (did you mean "dropout"?))",
                R"(sequence: unknown key; allowed keys: seqlen_q, seqlen_k, dropout, keys matching ^x-)"}));
  EXPECT_EQ(errors_of(schema, {{"dropout", "philx"}}),
            std::vector<std::string>{
                R"(dropout: "philx" is not allowed; allowed values: "none", "philox" (did you mean "philox"?))"});
}

TEST(JsonSchemaMessages, ShortensLongValuesAndQuotesOddKeys) {
  const Json schema = Json::parse(R"({"additionalProperties": {"type": "integer"}})");
  const std::string long_text(100, 'x');
  EXPECT_EQ(errors_of(schema, {{"a b", long_text}}),
            std::vector<std::string>{R"(["a b"]: expected an integer, got a string ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...))"});
}

TEST(JsonSchemaMessages, AHugeKeyIsQuotedShortAndGetsNoSuggestion) {
  const Json schema = Json::parse(R"({"properties": {"dropout": {}}, "additionalProperties": false})");
  const std::string key = "dropout" + std::string(10 << 20, 'x');
  const std::vector<std::string> errors = errors_of(schema, Json{{key, 1}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], "[\"dropout" + std::string(73, 'x') + "...\" (10485767 bytes)]: unknown key; allowed keys: dropout");
}

TEST(JsonSchemaMessages, AHugeBrokenDocumentGetsTheFirstErrorsAndANote) {
  const JsonSchema positive(Json{{"items", {{"minimum", 1}}}});
  const std::vector<SchemaError> errors = positive.validate(Json(std::vector<int>(300000, 0)));
  ASSERT_EQ(errors.size(), kMaxSchemaErrors + 1);
  EXPECT_EQ(format_error(errors[0]),
            "(root): has more problems than the 1000 below; the rest of the document was not checked");
  EXPECT_EQ(format_error(errors[1]), "[0]: must be >= 1, got 0");
  EXPECT_EQ(positive.validate(Json(std::vector<int>(kMaxSchemaErrors, 0))).size(), kMaxSchemaErrors)
      << "exactly the limit: every error, no note";
}

TEST(JsonSchemaMessages, ReportsEachPathAndMessageOnce) {
  const Json schema = Json::parse(R"({"$defs": {"s": {"type": "string"}}, "$ref": "#/$defs/s",
                                      "allOf": [{"type": "string"}, {"type": "string", "minLength": 2}]})");
  EXPECT_EQ(errors_of(schema, 5), std::vector<std::string>{"(root): expected a string, got an integer (5)"});
}

TEST(JsonSchemaMessages, TypeErrorIsNotRepeatedAsAnEnumError) {
  EXPECT_EQ(errors_of({{"type", "string"}, {"enum", {"a"}}}, 5),
            std::vector<std::string>{"(root): expected a string, got an integer (5)"});
}

// A mask is "none", "causal", or a sliding window given as an object.
const char* const kMaskSchema = R"({
  "$defs": {
    "window": {"type": "object", "description": "a sliding window {\"window\": n}",
               "required": ["window"], "additionalProperties": false,
               "properties": {"window": {"type": "integer", "minimum": 1}}}
  },
  "anyOf": [{"enum": ["none", "causal"]}, {"$ref": "#/$defs/window"}]})";

TEST(JsonSchemaAlternatives, ReportsTheOnlyBranchMeantForTheValuesType) {
  const Json schema = Json::parse(kMaskSchema);
  EXPECT_TRUE(JsonSchema(schema).validate("causal").empty());
  EXPECT_TRUE(JsonSchema(schema).validate({{"window", 128}}).empty());
  EXPECT_EQ(errors_of(schema, "casual"),
            std::vector<std::string>{R"((root): "casual" is not allowed; allowed values: "none", "causal" (did you mean "causal"?))"});
  EXPECT_EQ(errors_of(schema, {{"window", 0}, {"size", 1}}),
            (std::vector<std::string>{"window: must be >= 1, got 0",
                                      "size: unknown key; allowed keys: window"}));
}

TEST(JsonSchemaAlternatives, ListsTheFormsWhenNoBranchOrSeveralFitTheType) {
  const Json schema = Json::parse(kMaskSchema);
  EXPECT_EQ(errors_of(schema, 3),
            std::vector<std::string>{R"((root): does not match any allowed form: one of "none", "causal" | )"
                                     R"(a sliding window {"window": n} (got an integer (3)))"});
  const Json numbers = Json::parse(R"({"oneOf": [{"type": "integer", "minimum": 1}, {"type": "number", "maximum": -1}]})");
  EXPECT_EQ(errors_of(numbers, 0),
            std::vector<std::string>{"(root): does not match any allowed form: an integer | a number (got an integer (0))"});
}

TEST(JsonSchemaAlternatives, OneOfMatchingSeveralBranchesNamesThem) {
  const Json schema = Json::parse(R"({"oneOf": [{"type": "integer", "description": "a count"},
                                                 {"type": "number", "description": "a fraction"}]})");
  EXPECT_TRUE(JsonSchema(schema).validate(0.5).empty());
  EXPECT_EQ(errors_of(schema, 2),
            std::vector<std::string>{"(root): must match exactly one allowed form, but matches 2: a count | a fraction"});
}

TEST(JsonSchemaConstruction, RejectsUnsupportedKeywordsNamingThem) {
  EXPECT_EQ(rejection_of(Json::parse(R"({"properties": {"a": {"dependentSchemas": {}}}})")),
            "JSON schema #/properties/a: unsupported keyword \"dependentSchemas\" (only a subset of "
            "Draft 2020-12 is implemented, see harness/scenario/json_schema.hpp)");
  EXPECT_NE(rejection_of(Json::parse(R"({"unevaluatedProperties": false})")).find("\"unevaluatedProperties\""),
            std::string::npos);
  EXPECT_NE(rejection_of(Json::parse(R"({"$defs": {"x": {"definitions": {}}}})")).find("#/$defs/x"),
            std::string::npos);
}

TEST(JsonSchemaConstruction, RefusesPatternsALinearEngineCannotExpress) {
  EXPECT_EQ(rejection_of(Json::parse(R"({"properties": {"a": {"pattern": "(x)\\1"}}})")).rfind(
                "JSON schema #/properties/a/pattern: \"(x)\\\\1\" uses a backreference", 0),
            0u);
  EXPECT_NE(rejection_of(Json::parse(R"json({"patternProperties": {"^(?!x-)": {}}})json")).find("uses a lookahead"),
            std::string::npos);
}

TEST(JsonSchemaConstruction, RejectsReferencesItCannotResolve) {
  EXPECT_EQ(rejection_of(Json::parse(R"({"items": {"$ref": "#/$defs/missing"}})")),
            "JSON schema #/items/$ref: \"#/$defs/missing\" does not point to a subschema");
  EXPECT_NE(rejection_of(Json::parse(R"({"$defs": {"e": {"enum": [{}]}}, "$ref": "#/$defs/e/enum/0"})")), "");
  EXPECT_NE(rejection_of(Json::parse(R"({"$ref": "other.json#/a"})")), "");
  EXPECT_NE(rejection_of(Json::parse(R"({"$ref": "#/a~2"})")), "");
  EXPECT_NE(rejection_of(Json::parse(R"({"$ref": "#/a%2"})")), "");
  EXPECT_NE(rejection_of(Json::parse(R"({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                                        "$ref": "#/$defs/a"})"))
                .find("$ref cycle"),
            std::string::npos);
}

TEST(JsonSchemaConstruction, RejectsMalformedKeywordValues) {
  const char* const malformed[] = {
      R"({"type": "float"})",          R"({"type": []})",
      R"({"minimum": "1"})",           R"({"minItems": -1})",
      R"({"maxLength": 1.5})",         R"({"multipleOf": 0})",
      R"({"required": ["a", "a"]})",   R"({"pattern": "("})",
      R"({"patternProperties": {"[": {}}})", R"({"anyOf": []})",
      R"({"properties": {"a": 1}})",   R"({"uniqueItems": 1})",
      R"({"$schema": "http://json-schema.org/draft-07/schema#"})",
      R"({"properties": {"a": {"$id": "x"}}})",
  };
  for (const char* schema : malformed) {
    SCOPED_TRACE(schema);
    EXPECT_NE(rejection_of(Json::parse(schema)), "");
  }
  EXPECT_EQ(rejection_of(Json::parse(R"({"minItems": 2.0, "maxItems": 3, "anyOf": [true]})")), "");
}

}  // namespace
}  // namespace attnbench
