// `dplab train`: every flag is a shorthand for one option key (train/config/config.h), so a
// config file, flags and --set KEY=VALUE compose: config file < flags < --set.
#include <iostream>
#include <thread>

#include "dplab/comm/mpi_env.h"
#include "dplab/comm/registry.h"
#include "dplab/models/registry.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/tools/dplab/option_help.h"
#include "dplab/tools/dplab/plugin_args.h"
#include "dplab/train/config/registry_help.h"
#include "dplab/train/config/run_config.h"
#include "dplab/train/config/setting_warnings.h"
#include "dplab/train/config/train_flags.h"
#include "dplab/train/config/usage_agreement.h"
#include "dplab/train/loop/nonfinite_guard.h"
#include "dplab/train/loop/trainer.h"

namespace dplab::cli {
namespace {

std::string option_table() {
  std::string r =
      "Option keys (for --config files and --set KEY=VALUE; also: dplab options [PREFIX]), by "
      "area. A checkpoint stores every key a run reads (set or defaulted) except those marked "
      "[run]; a resumed run must keep them (--resume-override KEY,... allows a change). "
      "--algo NAME --help shows NAME's keys only.\n\n";
  r += option_reference("");
  r += "\nNames the options model, data, algo, optim and lr.schedule take (with --plugin LIB, "
       "the plugin's too; an experiment binary's --help lists its own):\n\n" +
       registry_reference(command_registry());
  r += fmt::format(
      "\nExit status: 0 done, 1 runtime error, 2 usage error, {} stopped on a non-finite loss, "
      "gradient or state (option nonfinite; no checkpoint written), {} pre-empted by a signal in "
      "preempt.signals (a checkpoint written to DIR/checkpoints: continue with --resume DIR).\n",
      kExitNonfinite, kExitPreempted);
  return r;
}

struct TrainArgs {
  FlagSet flags;
  bool nesterov = false;
  CLI::Option* nesterov_flag = nullptr;
  bool trace = false;
  CLI::Option* trace_flag = nullptr;
  bool reshard = false;
  CLI::Option* reshard_flag = nullptr;
  std::string config;
  std::vector<std::string> sets;
  std::vector<std::string> plugins;  // loaded before parsing (plugin_args.h)
};

}  // namespace

CommandSpec train_command() {
  return {
      "train", [](CLI::App& app) -> Action {
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        auto a = std::make_shared<TrainArgs>();
        CLI::App* train =
            app.add_subcommand("train", "train a model; prints a summary line per epoch");
        FlagSet& tf = a->flags;
        tf.add(*train, train_flag_names("model"), "model", "model: " + joined(model_names()));
        tf.add(*train, train_flag_names("data"), "data",
               "dataset: fashion-mnist, mnist-10k, mnist:DIR (the standard 60k/10k IDX files), "
               "shards:GLOB (tar shards, brace ranges) or folder:DIR (class folders)");
        tf.add(*train, train_flag_names("epochs"), "epochs", "number of epochs");
        tf.add(*train, train_flag_names("batch"), "batch", "batch size per rank");
        tf.add(*train, train_flag_names("lr"), "lr", "base learning rate");
        tf.add(*train, train_flag_names("momentum"), "momentum", "SGD momentum");
        a->nesterov_flag =
            train->add_flag("--nesterov,!--no-nesterov", a->nesterov,
                            "Nesterov momentum on/off (option nesterov) [default: off]");
        a->trace_flag = train->add_flag(
            "--trace", a->trace,
            "write a per-rank timeline to DIR/trace/ and DIR/trace.json (option trace; window: "
            "trace.steps) [default: off]");
        tf.add(*train, train_flag_names("wd"), "wd", "weight decay");
        tf.add(*train, train_flag_names("seed"), "seed", "seed of weights and data order");
        tf.add(*train, train_flag_names("threads"), "threads", "OpenMP threads for the ops",
               fmt::format("{} (the number of cores)", cores));
        tf.add(*train, train_flag_names("max_steps"), "max_steps",
               "stop after N optimizer steps (0: no limit)");
        tf.add(*train, train_flag_names("device"), "device",
               "where to train: cpu, cuda or cuda:N (fails at once, saying why, without a "
               "usable CUDA device)");
        tf.add(*train, train_flag_names("out"), "out",
               "output directory: DIR/run.json (the run record: options, versions, hosts; a "
               "valid --config), DIR/metrics.jsonl (one JSON object per line; "
               "docs/metrics_schema.md), "
               "DIR/checkpoints/step_<N>/ (every rank's state + manifest.json, for --resume) "
               "and DIR/final.safetensors (the final model, PyTorch names)");
        tf.add(*train, train_flag_names("resume"), "resume",
               "continue a run: its --out directory (newest valid checkpoint) or a checkpoint "
               "directory DIR/checkpoints/step_<N>");
        tf.add(*train, train_flag_names("resume.override"), "resume.override",
               "KEY,...: trajectory options the resumed run may change (KEY.* for a prefix)");
        a->reshard_flag = train->add_flag(
            "--reshard", a->reshard,
            "with --resume: continue on another number of ranks, keeping the global batch "
            "(world x batch); model, optimizer and algorithm state from the replicas' "
            "consensus, as each algorithm's policy forms it (option resume.reshard; "
            "docs/resharding.md) [default: off]");
        tf.add(*train, train_flag_names("init_from"), "init_from",
               "start a new run from a checkpoint's model weights (run or checkpoint directory, "
               "or a model .safetensors file)");
        tf.add(*train, train_flag_names("algo"), "algo",
               "distributed algorithm (" + joined(strategy_names()) + ")");
        tf.add(*train, train_flag_names("slowdown"), "slowdown",
               "RANK=FACTOR[,...]: slow those ranks down (heterogeneous workers): by sleeping, or "
               "on a virtual cluster by scaling their virtual compute");
        tf.add(*train, train_flag_names("cluster"), "cluster",
               "PRESET|FILE: run in virtual time on a modelled cluster (dplab cluster list, "
               "docs/virtual_cluster.md): every time figure is virtual, wall_s beside it");
        tf.add(*train, train_flag_names("ranks_per_node"), "ranks_per_node",
               "virtual nodes of N ranks (0: nodes are hosts)", "0");
        tf.add(*train, train_flag_names("comm.wait"), "comm.wait",
               "waiting in MPI: spin, backoff or auto (backoff when ranks outnumber cores)",
               "auto");
        train
            ->add_option(
                "--config", a->config,
                "TOML file of option keys (tables flatten with dots: [lr] schedule = ...), "
                "or a run record OUT/run.json (its options: the run again, without "
                "out and resume)")
            ->check(CLI::ExistingFile);
        train->add_option(
            "--plugin", a->plugins,
            "LIB.so: load a plugin's models, datasets, algorithms, optimizers and schedules "
            "(repeatable; option plugins; docs/extension_api.md). A resumed run loads the "
            "plugins its run.json records");
        train->add_option("--set", a->sets, "KEY=VALUE option override (repeatable); see below")
            ->take_all();
        train->footer(option_table());
        return [a, cores]() {
          // Under mpiexec, MPI (and the death watch) start before anything can fail, so a rank
          // that fails while reading its data or config aborts every rank, naming itself,
          // instead of leaving the others waiting in MPI_Init (comm/mpi_env.h).
          start_mpi_if_launched();
          Options o;
          // A usage error here is every rank's: printed once, exit status 2 on every rank.
          agree_on_usage([&] {
            Options from_file;
            std::map<std::string, std::string> places;  // where the file set each value
            if (!a->config.empty()) load_config_file(a->config, from_file, &places);
            o = from_file;
            a->flags.apply(o);
            if (a->nesterov_flag->count() > 0) o.set("nesterov", a->nesterov ? "true" : "false");
            if (a->trace_flag->count() > 0) o.set("trace", "true");
            if (a->reshard_flag->count() > 0) o.set("resume.reshard", "true");
            for (const auto& s : a->sets) apply_set_option(s, o);
            // Types, ranges and choices: the config file's values first (an error names the
            // file), then those of --set.
            check_config_values(from_file, o, a->config, command_registry(), &places);
            check_option_values(o, command_registry());
            // Every plugin loaded (--plugin, the config's, the resumed run's), by absolute path:
            // run.json records them, so --config run.json loads them again.
            if (!loaded_plugin_list().empty()) o.set("plugins", loaded_plugin_list());
          });
          // Settings that do nothing here: said once, by rank 0.
          if (reports_usage_errors()) {
            RunShape shape;
            shape.world_size = mpi_active() ? MpiEnv::get().world_size() : 1;
            shape.local_ranks = local_ranks_hint();
            shape.cores = int(cores);
            shape.load = host_load_average();
            for (const std::string& w : ineffective_settings(o, shape)) std::cerr << w << "\n";
          }
          TrainResult r;
          try {
            r = run_training(o, command_registry(), std::cout, std::cerr);
          } catch (const RunStopped& e) {  // every rank stops with the same status
            std::cout.flush();
            if (e.report())
              std::cerr << "dplab: " << (e.exit_code() == kExitError ? "error: " : "") << e.what()
                        << "\n";
            return e.exit_code();
          }
          if (r.is_rank0) {
            std::cout << fmt::format("test accuracy: {:.4f}\n", r.test_acc);
            if (r.test_acc5 >= 0) std::cout << fmt::format("top-5 accuracy: {:.4f}\n", r.test_acc5);
            if (!r.final_checkpoint.empty()) std::cout << "wrote " << r.final_checkpoint << "\n";
          }
          return 0;
        };
      }};
}

}  // namespace dplab::cli
