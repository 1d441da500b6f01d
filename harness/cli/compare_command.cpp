// `attnbench compare BASE NEW`: the regression gate (harness/compare/gate.hpp,
// docs/compare.md). Settings, both results files and every output path are
// checked, and every output rendered, before anything is written: bad input
// (exit 2) and a refusal because the devices or the run settings differ (exit
// 3) leave no file behind.
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>

#include "harness/cli/commands.hpp"
#include "harness/compare/gate.hpp"
#include "harness/compare/outputs.hpp"
#include "harness/errors.hpp"
#include "harness/results/document.hpp"
#include "harness/user_paths.hpp"

namespace attnbench {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct CompareOptions {
  std::string base, next, config, markdown, junit, json;
  bool allow_missing = false;
  // The tolerance flags: configuration key, the option (given or not), its value.
  struct Flag {
    std::string key;
    CLI::Option* option;
    std::function<Json()> value;
  };
  std::vector<Flag> flags;
};

// The flags given, as an object with the configuration's keys.
Json command_line_flags(const CompareOptions& options) {
  Json flags = Json::object();
  for (const CompareOptions::Flag& flag : options.flags) {
    if (flag.option->count() > 0) flags[flag.key] = flag.value();
  }
  return flags;
}

// --markdown, --junit and --json: "-" (stdout, for one of them) or a file, not
// a directory, that is no input (nor the config). Its directory is made (or
// found unwritable) once the comparison is rendered.
void check_output_paths(const CompareOptions& options) {
  std::vector<Diagnostic> diagnostics;
  std::vector<std::pair<std::string, std::string>> outputs;  // flag, path
  for (const auto& [flag, path] : {std::pair{"--markdown", &options.markdown}, std::pair{"--junit", &options.junit},
                                   std::pair{"--json", &options.json}}) {
    if (!path->empty()) outputs.emplace_back(flag, *path);
  }
  std::size_t to_stdout = 0;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& [flag, path] = outputs[i];
    if (path == "-") {
      if (++to_stdout > 1) diagnostics.push_back({"", flag, "only one output may go to stdout (\"-\")"});
      continue;
    }
    std::error_code error;
    for (const std::string& input : {options.base, options.next, options.config}) {
      if (!input.empty() && same_file(path, input)) {
        diagnostics.push_back({"", flag, path + " is an input of the comparison; give another file"});
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (outputs[j].second != "-" && same_file(outputs[j].second, path)) {
        diagnostics.push_back({"", flag, path + " is also given to " + outputs[j].first});
      }
    }
    if (fs::is_directory(path, error)) {
      diagnostics.push_back({"", flag, path + " is a directory; give a file name"});
    }
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
}

// Both files, with the problems of both reported together.
std::pair<Json, Json> load_both(const std::string& base, const std::string& next) {
  std::vector<Diagnostic> diagnostics;
  std::pair<Json, Json> documents;
  for (const auto& [path, document] : {std::pair{&base, &documents.first}, std::pair{&next, &documents.second}}) {
    try {
      *document = load_results_file(*path);
    } catch (const InputError& error) {
      diagnostics.insert(diagnostics.end(), error.diagnostics().begin(), error.diagnostics().end());
    }
  }
  if (!diagnostics.empty()) throw InputError(diagnostics);
  return documents;
}

int command_compare(const CompareOptions& options) {
  CompareSettings settings = options.config.empty() ? CompareSettings{} : load_compare_config(options.config);
  apply_command_line_settings(settings, command_line_flags(options));
  settings.allow_missing = options.allow_missing;
  check_output_paths(options);
  const auto [base, next] = load_both(options.base, options.next);
  const CompareReport report = compare_results(base, next, settings, options.base, options.next);

  const bool output_on_stdout = options.markdown == "-" || options.junit == "-" || options.json == "-";
  FILE* terminal = output_on_stdout ? stderr : stdout;
  if (report.refused) {
    std::fputs(render_compare_refusal(report).c_str(), terminal);
    return report.exit_code;
  }
  const std::vector<std::tuple<std::string, std::string, std::string>> files = {
      {"--markdown", options.markdown, options.markdown.empty() ? "" : render_compare_markdown(report)},
      {"--junit", options.junit, options.junit.empty() ? "" : render_compare_junit(report)},
      {"--json", options.json, options.json.empty() ? "" : compare_report_json(report).dump(1) + "\n"}};
  for (const auto& [flag, path, text] : files) {
    if (!path.empty() && path != "-") prepare_output_directory(path, flag);
  }
  for (const auto& [flag, path, text] : files) {
    if (path.empty()) continue;
    if (path == "-") std::fputs(text.c_str(), stdout);
    else write_file_atomically(path, text);
  }
  std::fputs(render_compare_terminal(report).c_str(), terminal);
  return report.exit_code;
}

}  // namespace

Subcommand add_compare_command(CLI::App& app) {
  auto options = std::make_shared<CompareOptions>();
  CLI::App* command = app.add_subcommand(
      "compare", "Regression gate: two results files, cell by cell (exit 0 pass, 1 regression, 3 not comparable)");
  command->add_option("base", options->base, "Results file of the baseline (BASE)")->required()->check(file_name_check());
  command->add_option("new", options->next, "Results file to judge (NEW)")->required()->check(file_name_check());
  command->add_option("--config", options->config,
                      "Settings file (scenarios/compare.schema.json): defaults and per-cell overrides")
      ->check(file_name_check());
  // Each setting flag stores what it is given; only the flags given replace the
  // defaults, so their initial values are never used.
  const auto add_setting = [&](const std::string& key, const std::string& name, auto type, const std::string& help) {
    auto stored = std::make_shared<decltype(type)>();
    CLI::Option* option = nullptr;
    if constexpr (std::is_same_v<decltype(type), bool>) option = command->add_flag(name, *stored, help);
    else option = command->add_option(name, *stored, help);
    options->flags.push_back({key, option, [stored] { return Json(*stored); }});
  };
  const CompareSettings defaults;
  const auto default_of = [](auto value) { return " (default " + Json(value).dump() + ")"; };
  add_setting("time_threshold", "--time-threshold", double{},
              "Slowdown the whole interval of a cell's time ratio must pass to regress" +
                  default_of(defaults.defaults.time_threshold));
  add_setting("min_effect", "--min-effect", double{},
              "Smallest slowdown (across rounds) that is a regression" + default_of(defaults.defaults.min_effect));
  add_setting("alpha", "--alpha", double{},
              "Family-wise error rate of the time verdicts, Holm" + default_of(defaults.alpha));
  add_setting("hbm_tolerance", "--hbm-tolerance", double{},
              "Relative change of HBM bytes allowed" + default_of(defaults.defaults.hbm_tolerance));
  add_setting("memory_slack", "--memory-slack", std::int64_t{},  // signed, so -5 is reported as -5
              "Bytes of peak memory growth allowed" + default_of(defaults.defaults.memory_slack));
  add_setting("accuracy_factor", "--accuracy-factor", double{},
              "NEW's error may be this times BASE's plus a floor" + default_of(defaults.defaults.accuracy_factor));
  add_setting("allow_different_devices", "--allow-different-devices", bool{}, "Compare even when the devices differ");
  add_setting("allow_noisy", "--allow-noisy", bool{},
              "Judge the time of noisy cells and rounds (timing.noise) instead of calling them inconclusive");
  add_setting("allow_different_settings", "--allow-different-settings", bool{},
              "Compare even when the runs' settings differ (threads, measure settings, cache mode)");
  command->add_flag("--allow-missing", options->allow_missing,
                    "Judge what both files hold even when one is unfinished or cells that ran in BASE are missing "
                    "from NEW (otherwise exit 3)");
  command->add_option("--markdown", options->markdown,
                      "Write a Markdown summary (for $GITHUB_STEP_SUMMARY); - for stdout")
      ->check(output_name_check());
  command->add_option("--junit", options->junit, "Write JUnit XML, one test case per compared cell; - for stdout")
      ->check(output_name_check());
  command->add_option("--json", options->json, "Write the comparison as JSON (attnbench.compare/1); - for stdout")
      ->check(output_name_check());
  return {command, [options](const std::vector<std::string>&) { return command_compare(*options); }};
}

}  // namespace attnbench
