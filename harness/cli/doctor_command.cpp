// `attnbench doctor`: what makes this machine unfit for benchmarking right now,
// and how to fix each (harness/machine_check.hpp; docs/ci-gate.md, "The machine").
#include <cstdio>
#include <memory>

#include "harness/cli/commands.hpp"
#include "harness/errors.hpp"
#include "harness/host_info.hpp"
#include "harness/machine_check.hpp"

namespace attnbench {

Subcommand add_doctor_command(CLI::App& app) {
  struct Options {
    int threads = 0;
    bool json = false;
  };
  auto options = std::make_shared<Options>();
  CLI::App* command = app.add_subcommand(
      "doctor", "What makes this machine unfit for benchmarking now (load, steal, governor, turbo, SMT, threads, "
                "memory; GPU processes, clocks, persistence, power, ECC, throttling), and how to fix it");
  command->add_option("--threads", options->threads, "The --threads the run will use (default: the available CPUs)")
      ->check(CLI::Range(1, 4096));
  command->add_flag("--json", options->json, "Machine-readable output");
  return {command, [options](const std::vector<std::string>&) {
            const int threads = options->threads > 0 ? options->threads : available_cpus().count;
            const nlohmann::ordered_json findings = findings_json(check_machine(threads));
            if (options->json) {
              std::printf("%s\n", findings.dump(2).c_str());
              return static_cast<int>(kExitSuccess);
            }
            std::size_t warnings = 0;
            for (const std::string& line : findings_lines(findings, false)) {
              std::printf("%s\n", line.c_str());
              warnings += line.rfind("warn:", 0) == 0 ? 1 : 0;
            }
            std::printf("\n%s\n", warnings == 0 ? "fit for benchmarking"
                                                : (std::to_string(warnings) +
                                                   " finding(s) can change timings; fix them or expect noisy records "
                                                   "(timing.noise) and inconclusive gates")
                                                      .c_str());
            return static_cast<int>(kExitSuccess);
          }};
}

}  // namespace attnbench
