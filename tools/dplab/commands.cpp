// The list of `dplab` subcommands. A new subcommand is a cmd_<name>.cpp defining
// `CommandSpec <name>_command()` plus one line here.
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {

CommandSpec train_command();
CommandSpec eval_command();
CommandSpec data_command();
CommandSpec shards_command();
CommandSpec predict_command();
CommandSpec init_command();
CommandSpec plot_command();
CommandSpec bench_command();
CommandSpec trace_command();
CommandSpec options_command();
CommandSpec cluster_command();

std::vector<CommandSpec> commands() {
  return {
      train_command(),   eval_command(),    data_command(),    shards_command(),
      predict_command(), init_command(),    plot_command(),    bench_command(),
      trace_command(),   options_command(), cluster_command(),
  };
}

}  // namespace dplab::cli
