// The official JSON-Schema-Test-Suite's draft2020-12 `pattern` and
// `patternProperties` groups (vendored under tests/data/json-schema-test-suite,
// see its README) through our validator: every test's verdict must match.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/scenario/json_schema.hpp"

namespace attnbench {
namespace {

using Json = nlohmann::ordered_json;

class SuiteFile : public ::testing::TestWithParam<const char*> {};

TEST_P(SuiteFile, EveryTestGetsTheSuitesVerdict) {
  const std::string path = std::string(ATTNBENCH_SOURCE_DIR) + "/tests/data/json-schema-test-suite/draft2020-12/" +
                           GetParam() + ".json";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const Json groups = Json::parse(in);
  std::size_t tests = 0;
  for (const Json& group : groups) {
    const JsonSchema schema(group["schema"]);
    for (const Json& test : group["tests"]) {
      SCOPED_TRACE(group["description"].get<std::string>() + " / " + test["description"].get<std::string>());
      const auto errors = schema.validate(test["data"]);
      EXPECT_EQ(errors.empty(), test["valid"].get<bool>()) << (errors.empty() ? "" : format_error(errors[0]));
      ++tests;
    }
  }
  EXPECT_GT(tests, 10u) << "the file holds the suite's tests";
}

INSTANTIATE_TEST_SUITE_P(Draft202012, SuiteFile, ::testing::Values("pattern", "patternProperties"));

}  // namespace
}  // namespace attnbench
