// Checkpoints: two safetensors files.
//   NAME.safetensors        the model's state_dict with PyTorch names (loads into PyTorch with
//                           strict=True); metadata: model, epoch, global_step.
//   NAME.state.safetensors  everything else a bitwise-identical resume needs: the optimizer
//                           state ("optim.*" tensors) and, as metadata, the loop position
//                           (epoch, step in epoch, global step), the partial sums of the epoch
//                           in progress, the per-epoch losses (replayed into the lr schedule)
//                           and the config values that must not change on resume.
// Data order and every random draw are pure functions of (seed, epoch, index), so the loop
// position is the whole RNG position.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "dplab/core/param_arena.h"

namespace dplab {

class Module;
class Optimizer;

struct LoopState {
  int64_t epoch = 0;          // epoch in progress (0-based); == epochs when training finished
  int64_t step_in_epoch = 0;  // batches of `epoch` already done
  int64_t global_step = 0;    // iterations done
  int64_t optimizer_steps = 0;
  double epoch_loss_sum = 0;  // sum over the samples of `epoch` done so far
  int64_t epoch_correct = 0;
  int64_t epoch_seen = 0;
  std::vector<double> epoch_losses;           // mean train loss of every finished epoch
  std::map<std::string, std::string> config;  // model, data, batch, seed, ...
};

// "DIR/final.safetensors" -> "DIR/final.state.safetensors".
std::string state_path_for(const std::string& model_path);

void save_checkpoint(const std::string& model_path, const Module& model, const Optimizer& optimizer,
                     const LoopState& loop);
// Loads model weights (strict) and optimizer state; returns the loop state. Accepts the model
// file or its .state file. Errors name the file.
LoopState load_checkpoint(const std::string& path, Module& model, Optimizer& optimizer);
// Loads only the model weights (for evaluation).
void load_model_weights(const std::string& path, Module& model);

}  // namespace dplab
