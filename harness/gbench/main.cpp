// attnbench-gbench: the scenario cases as Google Benchmark benchmarks (docs/gbench.md),
// so Google Benchmark's flags, reporters and tools/compare.py work on them.
//
//   attnbench-gbench --scenario=FILE [--scenario=FILE…] [--impl=LIST] [--threads=N]
//                    [--plugin=PATH…] [--benchmark_filter=REGEX] [--benchmark_format=json] …
//
// Our flags (also accepted as "--flag VALUE") are taken out of argv before
// Google Benchmark reads the rest. Exit codes: 0 success; 1 a case failed its
// accuracy check or raised an error; 2 bad usage, a bad scenario file (before
// any benchmark runs) or a filter that matches nothing; 4 an implementation
// named with --impl or by a scenario cannot run here (listing the benchmarks
// with --benchmark_list_tests works anywhere). See docs/gbench.md.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <benchmark/benchmark.h>

#include "harness/errors.hpp"
#include "harness/gbench/case_benchmark.hpp"
#include "harness/host_info.hpp"
#include "harness/message_text.hpp"
#include "harness/measure/protocol.hpp"
#include "harness/plugin/loader.hpp"
#include "harness/results/interruption.hpp"
#include "harness/run/selection.hpp"
#include "harness/scenario/scenario.hpp"
#include "harness/version.hpp"

namespace {

using namespace attnbench;

struct FrontEndOptions {
  std::vector<std::string> scenario_paths;
  std::vector<std::string> implementations;
  std::vector<std::string> plugin_paths;
  int threads = 0;  // 0: the CPUs this process can use (available_cpus())
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  std::stringstream stream(text);
  for (std::string item; std::getline(stream, item, ',');) {
    if (!item.empty()) items.push_back(item);
  }
  return items;
}

int parse_threads(const std::string& text) {
  std::size_t used = 0;
  int threads = 0;
  try {
    threads = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || threads < 1 || threads > 4096) {
    throw InputError("--threads=" + text + ": expected a whole number from 1 to 4096");
  }
  return threads;
}

// Takes --scenario, --impl, --threads and --plugin out of argv (argc shrinks accordingly).
FrontEndOptions take_front_end_flags(int& argc, char** argv) {
  FrontEndOptions options;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    std::string value;
    std::string_view flag;
    for (const std::string_view name : {"--scenario", "--impl", "--threads", "--plugin"}) {
      if (argument == name) {
        if (i + 1 >= argc) throw InputError(std::string(name) + ": needs a value");
        flag = name;
        value = argv[++i];
        break;
      }
      if (argument.starts_with(name) && argument.substr(name.size()).starts_with('=')) {
        flag = name;
        value = argument.substr(name.size() + 1);
        break;
      }
    }
    if (flag.empty()) {
      argv[kept++] = argv[i];
    } else if (flag == "--scenario") {
      options.scenario_paths.push_back(value);
    } else if (flag == "--impl") {
      options.implementations = split_commas(value);
    } else if (flag == "--plugin") {
      options.plugin_paths.push_back(value);
    } else {
      options.threads = parse_threads(value);
    }
  }
  argc = kept;
  argv[argc] = nullptr;
  return options;
}

// The flags Google Benchmark documents (its README and --help, up to 1.9) and
// ours: the candidates of "did you mean" for a flag neither knows.
const std::vector<std::string>& known_flags() {
  static const std::vector<std::string> flags = {
      "--scenario", "--impl", "--threads", "--plugin", "--help", "--v",
      "--benchmark_list_tests", "--benchmark_filter", "--benchmark_min_time", "--benchmark_min_warmup_time",
      "--benchmark_repetitions", "--benchmark_enable_random_interleaving", "--benchmark_report_aggregates_only",
      "--benchmark_display_aggregates_only", "--benchmark_format", "--benchmark_out", "--benchmark_out_format",
      "--benchmark_color", "--benchmark_counters_tabular", "--benchmark_context", "--benchmark_time_unit",
      "--benchmark_perf_counters", "--benchmark_dry_run"};
  return flags;
}

// One line per flag Google Benchmark left unrecognized, with the nearest known flag.
void suggest_flags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    const std::string name(argument.substr(0, argument.find('=')));
    if (const std::optional<std::string> near = closest_word(name, known_flags())) {
      std::fprintf(stderr, "%s: %s: did you mean %s?\n", argv[0], name.c_str(), near->c_str());
    }
  }
}

// The linked Google Benchmark's version, (major, minor); (0, 0) when unknown.
std::pair<int, int> benchmark_version() {
  int major = 0, minor = 0;
  std::sscanf(ATTNBENCH_BENCHMARK_VERSION, "%d.%d", &major, &minor);
  return {major, minor};
}

// Google Benchmark documents --benchmark_min_time as "<seconds>s" or
// "<iterations>x" since 1.8; before, it (and --benchmark_min_warmup_time, a
// number of seconds in every version) takes a bare number of seconds. Against
// an older library, "0.05s" becomes "0.05" (in `storage`, which outlives
// argv's use), and "<N>x" is refused with what to write instead.
void adapt_min_time_flags(int argc, char** argv, std::vector<std::string>& storage) {
  const bool suffixes = benchmark_version() >= std::pair{1, 8};
  storage.reserve(static_cast<std::size_t>(argc));
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    for (const std::string_view flag : {"--benchmark_min_time=", "--benchmark_min_warmup_time="}) {
      if (!argument.starts_with(flag) || argument.size() == flag.size()) continue;
      const std::string_view value = argument.substr(flag.size());
      const bool warmup = flag == "--benchmark_min_warmup_time=";
      if (suffixes && !warmup) break;
      if (value.back() == 's') {
        storage.push_back(std::string(flag) + std::string(value.substr(0, value.size() - 1)));
        argv[i] = storage.back().data();
      } else if (value.back() == 'x' && !warmup) {
        throw InputError(std::string(argument) + ": a number of iterations needs Google Benchmark 1.8 or later; "
                         "this attnbench-gbench is linked against " ATTNBENCH_BENCHMARK_VERSION
                         ", which takes seconds: --benchmark_min_time=0.05s (or 0.05)");
      }
      break;
    }
  }
}

void print_help() {
  std::printf(
      "attnbench-gbench: attnbench scenario cases as Google Benchmark benchmarks\n"
      "  --scenario=FILE   scenario file (repeatable; at least one)\n"
      "  --impl=LIST       comma-separated implementations (default: the scenario's)\n"
      "  --threads=N       host threads for CPU implementations (default: the CPUs this\n"
      "                    process can use: its affinity mask and cgroup CPU quota)\n"
      "  --plugin=PATH     load implementations from this shared library (repeatable;\n"
      "                    also the ':'-separated list in ATTNBENCH_PLUGINS)\n"
      "Benchmarks are named <scenario>/<implementation>/<case_key>; --benchmark_filter is\n"
      "a POSIX extended regex, so escape . + ( ) in case keys. See docs/gbench.md.\n\n");
  benchmark::PrintDefaultHelp();
}

// Whether Google Benchmark was asked only to list the benchmarks
// (--benchmark_list_tests, with no value or a true one, the last one counting).
bool lists_tests_only(int argc, char** argv) {
  bool listing = false;
  const std::string_view flag = "--benchmark_list_tests";
  for (int i = 1; i < argc; ++i) {
    const std::string_view argument = argv[i];
    if (argument == flag) listing = true;
    if (argument.starts_with(flag) && argument.substr(flag.size()).starts_with('=')) {
      std::string value(argument.substr(flag.size() + 1));
      std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
      listing = !(value == "0" || value == "false" || value == "f" || value == "no" || value == "n" || value == "off");
    }
  }
  return listing;
}

// One benchmark per (case, implementation), case by case, timed with manual
// time. Listing the benchmarks names those of implementations this machine
// cannot run too (a GPU scenario can be inspected anywhere); running them
// refuses with exit 4 before any benchmark runs, as `attnbench run` does.
void register_benchmarks(const std::vector<Scenario>& scenarios, const std::vector<std::string>& requested,
                         bool listing_only, gbench::CaseBenchmarks& benchmarks) {
  const auto choose = listing_only ? resolve_implementations : select_implementations;
  for (const Scenario& scenario : scenarios) {
    const std::vector<Implementation*> implementations =
        requested.empty() ? choose(scenario.implementations, scenario.path + ": implementations")
                          : choose(requested, "--impl");
    for (std::size_t case_index = 0; case_index < scenario.cases.size(); ++case_index) {
      for (Implementation* implementation : implementations) {
        const std::string name = gbench::benchmark_name(scenario, scenario.cases[case_index], *implementation);
        benchmark::RegisterBenchmark(name.c_str(),
                                     [&benchmarks, &scenario, case_index, implementation](benchmark::State& state) {
                                       benchmarks.run(state, scenario, case_index, *implementation);
                                     })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

int run(int argc, char** argv) {
  const FrontEndOptions options = take_front_end_flags(argc, argv);
  std::vector<std::string> adapted_flags;
  adapt_min_time_flags(argc, argv, adapted_flags);
  const bool listing_only = lists_tests_only(argc, argv);
  std::string out_path;  // --benchmark_out, which Google Benchmark does not report back
  for (int i = 1; i < argc; ++i) {
    const std::string argument = argv[i];
    if (argument.rfind("--benchmark_out=", 0) == 0) out_path = argument.substr(std::string("--benchmark_out=").size());
  }
  benchmark::Initialize(&argc, argv, print_help);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) {
    suggest_flags(argc, argv);
    return kExitBadInput;
  }
  if (options.scenario_paths.empty()) throw InputError("no scenario: give --scenario=FILE (see --help)");
  load_plugins(options.plugin_paths);

  const std::vector<Scenario> scenarios = load_scenarios(
      options.scenario_paths,
      options.implementations.empty() ? ImplementationNames::registered : ImplementationNames::any);
  const int threads = options.threads > 0 ? options.threads : available_cpus().count;
  gbench::CaseBenchmarks benchmarks(threads);
  register_benchmarks(scenarios, options.implementations, listing_only, benchmarks);
  // The JSON reporter's "context": which attnbench measured, with how many threads.
  benchmark::AddCustomContext("attnbench_version", tool_version());
  benchmark::AddCustomContext("attnbench_git_revision", git_revision());
  benchmark::AddCustomContext("attnbench_threads", std::to_string(threads));

  const std::size_t matched = benchmark::RunSpecifiedBenchmarks();
  const std::string filter = benchmark::GetBenchmarkFilter();
  benchmark::Shutdown();
  if (matched == 0) {
    // Google Benchmark opened --benchmark_out before finding nothing to run; bad
    // input leaves no output behind.
    if (!out_path.empty() && std::filesystem::exists(out_path) && std::filesystem::file_size(out_path) == 0) {
      std::filesystem::remove(out_path);
    }
    throw InputError("--benchmark_filter=" + filter + " matches no benchmark");
  }
  return benchmarks.any_failed() ? kExitGateFailed : kExitSuccess;
}

}  // namespace

// Only here do errors become exit codes; messages go to stderr, so stdout stays
// the reporter's (JSON with --benchmark_format=json).
int main(int argc, char** argv) {
  attnbench::handle_interrupts_outside_runs();  // before anything else: a signal never ends the process silently
  attnbench::keep_continuations_pending();  // before any thread starts (harness/measure/protocol.hpp)
  const attnbench::ReleasePluginsOnExit release_plugins_at_the_end;
  try {
    return run(argc, argv);
  } catch (const InputError& error) {
    for (const auto& diagnostic : error.diagnostics()) {
      std::fprintf(stderr, "attnbench-gbench: error: %s\n", diagnostic.format().c_str());
    }
    return kExitBadInput;
  } catch (const EnvironmentError& error) {
    std::fprintf(stderr, "attnbench-gbench: error: %s\n", error.what());
    return kExitEnvironment;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "attnbench-gbench: internal error: %s\n", error.what());
    return kExitGateFailed;
  }
}
