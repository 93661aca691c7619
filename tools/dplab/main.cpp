// The `dplab` command: one subcommand per cmd_<name>.cpp (see commands.cpp).
// Exit status: 0 success, 1 runtime error, 2 usage error.
#include <iostream>

#include "dplab/comm/mpi_env.h"
#include "dplab/tools/dplab/command.h"

namespace {

int run(int argc, char** argv) {
  CLI::App app{"dplab: data-parallel training research", "dplab"};
  app.require_subcommand(1);
  std::vector<std::pair<CLI::App*, dplab::cli::Action>> actions;
  for (const auto& spec : dplab::cli::commands()) {
    dplab::cli::Action act = spec.add(app);
    actions.emplace_back(app.get_subcommand(spec.name), std::move(act));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // prints the message and a hint to --help
    return 2;
  }
  for (auto& [sub, act] : actions)
    if (sub && *sub) return act();
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const dplab::UsageError& e) {
    std::cerr << "dplab: error: " << e.what() << "\n";
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
