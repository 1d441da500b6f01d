// libFuzzer target: results files, mutated and corrupted. parse_results_text
// either refuses the text (InputError: bad input, exit code 2) or returns a
// document of the results schema's shape; that document is then compared with
// itself, as `attnbench compare` would read it, which must not throw anything
// but InputError (a JSON type error here is the "internal error" of issue 13).
#include <cstddef>
#include <cstdint>
#include <string>

#include "harness/compare/gate.hpp"
#include "harness/errors.hpp"
#include "harness/results/document.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace attnbench;
  const std::string text(reinterpret_cast<const char*>(data), size);
  nlohmann::ordered_json document;
  try {
    document = parse_results_text(text, "fuzz.json");
  } catch (const InputError&) {
    return 0;
  }
  try {
    (void)compare_results(document, document, CompareSettings{}, "fuzz.json", "fuzz.json");
  } catch (const InputError&) {
  }
  return 0;
}
