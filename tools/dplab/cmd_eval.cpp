// `dplab eval`: the test accuracy of a checkpoint.
#include <iostream>
#include <thread>

#include "dplab/tools/dplab/command.h"
#include "dplab/train/loop/trainer.h"

namespace dplab::cli {
namespace {
struct EvalArgs {
  FlagSet flags;
  std::string checkpoint;
  std::vector<std::string> sets;
};
}  // namespace

CommandSpec eval_command() {
  return {
      "eval", [](CLI::App& app) -> Action {
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        auto a = std::make_shared<EvalArgs>();
        CLI::App* eval =
            app.add_subcommand("eval",
                               "evaluate a checkpoint; prints the test accuracy (and top-5 with "
                               "more than 10 classes); under mpiexec the ranks share the test set");
        a->flags.add(*eval, "--model", "model", "model the checkpoint holds",
                     "the one the checkpoint records");
        a->flags.add(*eval, "--data", "data",
                     "data evaluated: an IDX dataset's test split, or shards:GLOB / folder:DIR "
                     "as given (folder:DIR with train/ and val/: DIR/val; data.val wins)");
        a->flags.add(*eval, "--threads", "threads", "OpenMP threads",
                     fmt::format("{} (the number of cores)", cores));
        eval->add_option("--checkpoint", a->checkpoint,
                         "model .safetensors file (PyTorch names), or a checkpoint or run "
                         "directory (its newest checkpoint: rank 0's model)")
            ->required();
        eval->add_option("--set", a->sets, "KEY=VALUE option override (data.dir, eval.batch, ...)")
            ->take_all();
        return [a]() {
          Options o;
          a->flags.apply(o);
          o.set("checkpoint", a->checkpoint);
          for (const auto& s : a->sets) apply_set_option(s, o);
          const auto r = run_evaluation(o);
          if (!r.is_rank0) return 0;  // under mpiexec: the ranks' sums are combined; one prints
          std::cout << fmt::format("test accuracy: {:.4f} ({}/{}), test loss {:.4f}\n", r.accuracy,
                                   r.correct, r.count, r.loss);
          if (r.top5)
            std::cout << fmt::format("top-5 accuracy: {:.4f} ({}/{})\n", r.accuracy5, r.correct5,
                                     r.count);
          return 0;
        };
      }};
}

}  // namespace dplab::cli
