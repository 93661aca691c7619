// The names the training driver resolves (options model, data, algo, optim, lr.schedule) as one
// value: `dplab train` builds Registry::with_builtins(); an experiment's main() takes the same
// and adds its own models, datasets, algorithms, optimizers and schedules, then hands it to
// run_training (train/loop/trainer.h). The library keeps no table of its own that experiments
// write into: two registries in one process do not see each other's entries.
//
//   Registry r = Registry::with_builtins();
//   r.add_model("small_vgg", {1, 28, 28}, 10, [](int classes) { return make_small_vgg(classes); },
//               "a VGG-style net for 28x28 inputs");
//   TrainResult res = run_training(opt, r, std::cout, std::cerr);
//
// Each entry carries a line of help and the option keys its factory reads (for help only: the
// driver's unknown-key check accepts every key a factory actually reads).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplab/comm/strategy.h"
#include "dplab/comm/topology.h"
#include "dplab/core/options.h"
#include "dplab/data/dataset.h"
#include "dplab/layers/module.h"
#include "dplab/optim/optimizer.h"
#include "dplab/optim/schedule.h"
#include "dplab/optim/sgd.h"

namespace dplab {

// A training run's data: the training and the evaluation split.
struct TrainData {
  std::shared_ptr<Dataset> train, test;
  // Encoded images (shards, folders) of any height and width: only the channel count must
  // match the model's input shape; otherwise the whole sample shape must.
  bool images = false;
};

struct ModelArgs {
  uint64_t seed = 0;                 // option seed: the parameters' initialisation
  int num_classes = -1;              // the training data's class count
  bool zero_init_residual = false;   // option model.zero_init_residual
  const Options* options = nullptr;  // for a model's own keys
  int in_channels = -1;              // image data: the samples' channels (-1: not images)
};

struct ModelEntry {
  std::string name;
  std::string help;
  Shape input_shape;    // per sample, e.g. {1, 28, 28}
  int num_classes = 0;  // the default class count
  std::vector<std::string> keys;
  // Returns the model with its parameters initialised from args.seed.
  std::function<std::shared_ptr<Module>(const ModelArgs&)> make;
  // Image models that adapt their first layer to the data's channel count (the ResNets): any
  // channels pass the shape check and reach make as ModelArgs::in_channels.
  bool any_channels = false;
};

struct DatasetEntry {
  // An exact name ("fashion-mnist"), a prefix ending in ':' ("shards:" matches
  // "shards:/data/train-*.tar"), or "*": any name no other entry matches.
  std::string name;
  std::string help;
  std::vector<std::string> keys;
  // `spec` is the data option's whole value.
  std::function<TrainData(const std::string& spec, const Options&)> make;
};

struct StrategyEntry {
  std::string name;
  std::string help;
  std::vector<std::string> keys;
  // Builds the algorithm on the ranks of `topo` (built by the driver, with the run's virtual
  // clock under a cluster; null for a single_process entry).
  std::function<std::unique_ptr<Strategy>(std::shared_ptr<Topology> topo, const Options&)> make;
  // Capabilities the driver checks instead of names (check_accumulation, uses_communicator).
  // Every step's update is the optimizer's step on the gradient averaged over the ranks (or
  // this rank's own, in one process), and the strategy calls after_backward only where the
  // plan says optimizer_step: summing micro-batch gradients (accumulate_steps) commutes with
  // it. local and allreduce.
  bool averages_gradients = false;
  // One process, no communicator (local): option comm = nccl then asks for nothing.
  bool single_process = false;
  // What the algorithm exchanges instead of gradients through GradSync: said when a run of it
  // is given a gradient-compression key (train/config/compress_refusal.h); "" otherwise.
  std::string exchanges = "";
  // A line for the run header from the run's options, global batch and base lr, or empty
  // (DC-S3GD: the paper's peak lr, comm/algorithms/dcs3gd.h dcs3gd_run_note).
  std::function<std::string(const Options&, int64_t global_batch, double base_lr)> run_note =
      nullptr;
};

// Throws a UsageError naming option accumulate_steps when `steps` > 1 and `algo` does not
// average gradients (StrategyEntry::averages_gradients).
void check_accumulation(const StrategyEntry& algo, int64_t steps);
// Throws a UsageError naming option algo when `algo` runs in one process
// (StrategyEntry::single_process) but an MPI launcher started `launched_ranks` > 1 of this
// program: each would train on its own and write the same files.
void check_launch(const StrategyEntry& algo, int launched_ranks);
// Whether a run of `algo` builds communicators (so option comm = nccl applies to it).
inline bool uses_communicator(const StrategyEntry& algo) {
  return !algo.single_process;
}

struct OptimizerEntry {
  std::string name;
  std::string help;
  std::vector<std::string> keys;
  // `sgd` holds the values every optimizer shares, already read: lr, momentum, wd, nesterov,
  // dampening (each unset one at the entry's `defaults` where it has one).
  std::function<std::unique_ptr<Optimizer>(const Options&, ParamArena&, const SGDOptions& sgd)>
      make;
  // The optimizer's own defaults for shared keys it reads (lr, wd, ...) where they differ from
  // the option table's (train/config/config.cpp): an unset key takes these. AdamW's are PyTorch's
  // (lr 1e-3, weight decay 1e-2); SGD and LARS keep the table's. `defaults_from` says whose
  // defaults the optimizer's unset keys take, for the run header and run.json.
  std::map<std::string, std::string> defaults = {};
  std::string defaults_from = {};
};

struct ScheduleEntry {
  std::string name;
  std::string help;
  std::vector<std::string> keys;
  // The multiplier of the base lr (optim/schedule.h); `total_epochs` is option epochs. The
  // factory builds the schedule without warm-up: Registry::add wraps every entry's factory in
  // the linear warm-up of lr.warmup_epochs and lr.warmup_start_factor (optim/schedule.h
  // with_warmup), so an experiment's schedule takes the warm-up as the built-in ones do.
  std::function<std::unique_ptr<LrSchedule>(const Options&, int64_t total_epochs)> make;
};

// A shared library whose entries a registry holds (train/config/plugin_loader.h): run.json names
// each with its path and SHA-256.
struct PluginRecord {
  std::string path;    // absolute
  std::string sha256;  // of the file loaded, 64 hex digits
};

class Registry {
 public:
  Registry() = default;  // empty
  // Every model, dataset, algorithm, optimizer and schedule `dplab train` knows.
  static Registry with_builtins();

  // Adding a name that is already there throws (an experiment replaces nothing by accident).
  Registry& add(ModelEntry e);
  Registry& add(DatasetEntry e);
  Registry& add(StrategyEntry e);
  Registry& add(OptimizerEntry e);
  Registry& add(ScheduleEntry e);
  // A model from a factory of an uninitialised module: the registry initialises its parameters
  // from the run's seed (layers/module.h initialize), as for the built-in models.
  Registry& add_model(std::string name, Shape input_shape, int num_classes,
                      std::function<std::shared_ptr<Module>(int num_classes)> make,
                      std::string help = "");

  // Lookups by the option's value; an unknown name is a UsageError naming the option and
  // listing the known names.
  const ModelEntry& model(const std::string& name) const;
  const DatasetEntry& dataset(const std::string& spec) const;
  const StrategyEntry& strategy(const std::string& name) const;
  const OptimizerEntry& optimizer(const std::string& name) const;
  const ScheduleEntry& schedule(const std::string& name) const;

  const std::vector<ModelEntry>& models() const { return models_; }
  const std::vector<DatasetEntry>& datasets() const { return datasets_; }
  const std::vector<StrategyEntry>& strategies() const { return strategies_; }
  const std::vector<OptimizerEntry>& optimizers() const { return optimizers_; }
  const std::vector<ScheduleEntry>& schedules() const { return schedules_; }

  // The names option `key` takes from this registry (model, algo, optim, lr.schedule; for data
  // the exact names and prefixes), nullopt for any other key: option_values.h checks the values
  // of these keys against an experiment's registry, not a fixed list.
  std::optional<std::vector<std::string>> names_for(const std::string& key) const;

  // The plugins whose entries were added (load_plugin records each one), in loading order.
  const std::vector<PluginRecord>& plugins() const { return plugins_; }
  void add_plugin_record(PluginRecord p) { plugins_.push_back(std::move(p)); }

  // Builds the model `args` asks for (checks the class count as models/registry.h does).
  std::shared_ptr<Module> make_model(const std::string& name, const ModelArgs& args) const;

 private:
  std::vector<ModelEntry> models_;
  std::vector<DatasetEntry> datasets_;
  std::vector<StrategyEntry> strategies_;
  std::vector<OptimizerEntry> optimizers_;
  std::vector<ScheduleEntry> schedules_;
  std::vector<PluginRecord> plugins_;
};

}  // namespace dplab
