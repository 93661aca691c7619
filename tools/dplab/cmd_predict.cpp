// `dplab predict`: a model's logits, in eval mode, for a batch stored in a safetensors file
// (tensor `input`, [N, C, H, W] f32); writes tensor `logits` [N, classes]. Used to check that a
// checkpoint gives the same outputs in dplab and PyTorch (tools/scripts/resnet_roundtrip.py).
#include <iostream>

#include "dplab/core/autograd.h"
#include "dplab/core/safetensors.h"
#include "dplab/models/registry.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/tools/train/checkpoint.h"

namespace dplab::cli {
namespace {
struct PredictArgs {
  std::string model, checkpoint, input, output;
};

Tensor read_input(const std::string& path) {
  for (auto& nt : load_safetensors(path))
    if (nt.name == "input") {
      DPLAB_CHECK(nt.tensor.dim() == 4, "{}: tensor 'input' must be [N, C, H, W], got {}", path,
                  nt.tensor.str());
      return nt.tensor.dtype() == DType::f32 ? nt.tensor : nt.tensor.to(DType::f32);
    }
  DPLAB_FAIL("{}: no tensor named 'input'", path);
}

// The class count a checkpoint was saved with (from fc.weight / the last 2-d weight), so a
// checkpoint with a non-default head loads without an extra flag.
int classes_in(const std::string& path) {
  int classes = -1;
  for (auto& nt : load_safetensors(path))
    if (nt.tensor.dim() == 2 && nt.name.ends_with(".weight")) classes = int(nt.tensor.size(0));
  return classes;
}
}  // namespace

CommandSpec predict_command() {
  return {"predict", [](CLI::App& app) -> Action {
            auto a = std::make_shared<PredictArgs>();
            CLI::App* c = app.add_subcommand(
                "predict", "eval-mode logits of a checkpoint for a batch (safetensors in/out)");
            c->add_option("--model", a->model, "model name (e.g. resnet50)")->required();
            c->add_option("--checkpoint", a->checkpoint, "weights .safetensors (PyTorch names)")
                ->required();
            c->add_option("--input", a->input, ".safetensors holding tensor 'input' [N,C,H,W]")
                ->required();
            c->add_option("--output", a->output, ".safetensors to write tensor 'logits' to")
                ->required();
            return [a]() {
              auto model = make_model(a->model, 0, classes_in(a->checkpoint));
              load_model_weights(a->checkpoint, *model);
              model->eval();
              NoGradGuard no_grad;
              Tensor logits = model->forward(read_input(a->input));
              save_safetensors(a->output, {{"logits", logits}}, {{"model", a->model}});
              std::cout << fmt::format("wrote logits {} to {}\n", shape_str(logits.shape()),
                                       a->output);
              return 0;
            };
          }};
}

}  // namespace dplab::cli
