#include "harness/cli/plugin_options.hpp"

#include "harness/cli/commands.hpp"
#include "harness/plugin/loader.hpp"

namespace attnbench {

void add_plugin_options(const std::vector<CLI::App*>& commands, PluginRequest& request) {
  request.commands = commands;
  for (CLI::App* command : commands) {
    command
        ->add_option("--plugin", request.paths,
                     std::string("Load attention implementations from this shared library (repeatable; also the "
                                 "':'-separated list in ") +
                         kPluginsEnvironmentVariable + "); see docs/plugins.md")
        ->type_name("PATH")
        ->check(file_name_check());
  }
}

void PluginRequest::load_if_chosen() const {
  for (const CLI::App* command : commands) {
    if (command->parsed()) {
      load_plugins(paths);
      return;
    }
  }
}

}  // namespace attnbench
