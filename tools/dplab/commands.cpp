// The list of `dplab` subcommands. A new subcommand is a cmd_<name>.cpp defining
// `CommandSpec <name>_command()` plus one line here.
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {

CommandSpec train_command();
CommandSpec eval_command();
CommandSpec data_command();

std::vector<CommandSpec> commands() {
  return {
      train_command(),
      eval_command(),
      data_command(),
  };
}

}  // namespace dplab::cli
