// The `dplab` command: one subcommand per cmd_<name>.cpp (see commands.cpp).
// Exit status: 0 success, 1 runtime error, 2 usage error (an unknown flag, option key or value,
// a value of the wrong type or out of range; dplab::UsageError). Under mpiexec a usage error is
// printed by rank 0 only and every rank exits 2 (train/config/usage_agreement.h).
#include <iostream>

#include "dplab/comm/mpi_env.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/tools/dplab/option_help.h"
#include "dplab/tools/dplab/plugin_args.h"
#include "dplab/tools/dplab/unknown_flag.h"
#include "dplab/tools/dplab/version.h"
#include "dplab/train/config/usage_agreement.h"

namespace {

int run(int argc, char** argv) {
  // Before the app: its flags' checks and help list the plugins' names (plugin_args.h).
  dplab::cli::load_command_plugins(argc, argv);
  CLI::App app{"dplab: data-parallel training research", "dplab"};
  app.require_subcommand(0, 1);
  bool version = false;
  app.add_flag("--version", version, "print the version and the git commit, then exit");
  std::vector<std::pair<CLI::App*, dplab::cli::Action>> actions;
  for (const auto& spec : dplab::cli::commands()) {
    dplab::cli::Action act = spec.add(app);
    actions.emplace_back(app.get_subcommand(spec.name), std::move(act));
  }
  dplab::cli::focus_train_help(app, argc, argv);  // train --algo NAME --help: NAME's keys
  const bool report = dplab::cli::reports_usage_errors();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return report ? app.exit(e) : 0;
  } catch (const CLI::CallForAllHelp& e) {
    return report ? app.exit(e) : 0;
  } catch (const CLI::ParseError& e) {
    // An unknown flag or command: name it, with the nearest known one.
    const std::string unknown = dplab::cli::unknown_argument_message(app, argc, argv);
    if (report) {
      std::cerr << "dplab: error: " << (unknown.empty() ? std::string(e.what()) : unknown)
                << "\nRun with --help for more information.\n";
    }
    return 2;
  }
  if (version) {
    std::cout << dplab::cli::version_text();
    return 0;
  }
  for (auto& [sub, act] : actions)
    if (sub && *sub) return act();
  if (report) std::cerr << "dplab: error: a command is required\n" << app.help();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const dplab::UsageError& e) {
    // Every rank has the same command line and so the same error (usage_agreement.h).
    if (dplab::cli::reports_usage_errors()) std::cerr << "dplab: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    dplab::abort_if_distributed(e.what());  // under mpiexec: name this rank, stop all ranks
    std::cerr << "dplab: error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    std::cerr << "dplab: error: unknown exception\n";
    return 1;
  }
}
