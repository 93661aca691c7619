// `dplab init`: a freshly initialised model's state_dict (parameters and buffers, PyTorch names;
// num_batches_tracked as i64) as safetensors, e.g. to start PyTorch from dplab's weights. The
// metadata names the model as `dplab train`'s model files do (dplab.model), so `dplab eval`,
// `dplab predict` and --init-from take the model from the file without --model.
#include <iostream>

#include "dplab/core/safetensors.h"
#include "dplab/models/registry.h"
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {
namespace {
struct InitArgs {
  std::string model, out;
  uint64_t seed = 0;
  int num_classes = -1;
};
}  // namespace

CommandSpec init_command() {
  return {"init", [](CLI::App& app) -> Action {
            auto a = std::make_shared<InitArgs>();
            CLI::App* c =
                app.add_subcommand("init", "write a freshly initialised model as safetensors");
            c->add_option("--model", a->model, "model name (e.g. resnet50)")->required();
            c->add_option("--seed", a->seed, "initialisation seed")->default_str("0");
            c->add_option("--num-classes", a->num_classes, "classes of the head (-1: default)")
                ->default_str("-1");
            c->add_option("--out", a->out, "output .safetensors")->required();
            return [a]() {
              auto model = make_model(a->model, a->seed, a->num_classes);
              save_safetensors(a->out, model->state_dict(),
                               {{"format", "pt"},  // what PyTorch's safetensors loader expects
                                {"dplab.model", a->model},
                                {"dplab.seed", std::to_string(a->seed)}});
              std::cout << fmt::format("wrote {} ({} parameters) to {}\n", a->model,
                                       model->num_parameters(), a->out);
              return 0;
            };
          }};
}

}  // namespace dplab::cli
