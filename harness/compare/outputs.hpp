// The outputs of `attnbench compare` (docs/compare.md), all rendered from one
// CompareReport: a terminal table, Markdown for a CI job summary, JUnit XML
// (one test case per compared cell) and JSON (schema id "attnbench.compare/1").
// docs/compare.md describes each.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "harness/compare/gate.hpp"

namespace attnbench {

std::string render_compare_terminal(const CompareReport& report);
std::string render_compare_markdown(const CompareReport& report);
std::string render_compare_junit(const CompareReport& report);
nlohmann::ordered_json compare_report_json(const CompareReport& report);

// Why a comparison was refused (devices differ), for the terminal.
std::string render_compare_refusal(const CompareReport& report);

}  // namespace attnbench
