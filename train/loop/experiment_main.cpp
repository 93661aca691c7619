#include "dplab/train/loop/experiment_main.h"

#include <algorithm>
#include <iostream>
#include <thread>
#include <vector>

#include "dplab/comm/mpi_env.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"
#include "dplab/train/config/registry_help.h"
#include "dplab/train/config/setting_warnings.h"
#include "dplab/train/config/train_flags.h"
#include "dplab/train/config/usage_agreement.h"
#include "dplab/train/loop/run_stopped.h"
#include "dplab/train/loop/trainer.h"

namespace dplab {

int experiment_main(int argc, char** argv, const Registry& registry, const Experiment& exp) {
  start_mpi_if_launched();  // before anything can fail, as `dplab train`
  const bool rank0 = !mpi_active() || MpiEnv::get().world_rank() == 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a != "--help" && a != "-h") continue;
    if (rank0)
      std::cout << "usage: " << exp.name << " [KEY=VALUE ...] [--FLAG VALUE ...]\n\n"
                << exp.about
                << "\n\nArguments are option keys as KEY=VALUE (dplab options [PREFIX] lists "
                << "them), --set KEY=VALUE, or dplab train's flags (--threads 1, --out DIR, "
                << "--trace, ...), applied in order. Names this binary knows, with their help "
                << "and the keys they read:\n\n"
                << registry_reference(registry);
    return 0;
  }
  Options opt = exp.defaults;
  try {
    // A usage error is every rank's: the ranks agree on it, rank 0 prints it, all exit 2.
    cli::agree_on_usage([&] {
      apply_experiment_args(std::vector<std::string>(argv + 1, argv + argc), opt, exp.name);
      check_option_values(opt, registry);  // types, ranges, and this registry's names
    });
    if (rank0) {  // settings that do nothing here, as `dplab train` reports them
      RunShape shape;
      shape.world_size = mpi_active() ? MpiEnv::get().world_size() : 1;
      shape.local_ranks = local_ranks_hint();
      shape.cores = int(std::max(1u, std::thread::hardware_concurrency()));
      shape.load = host_load_average();
      for (const std::string& w : ineffective_settings(opt, shape)) std::cerr << w << "\n";
    }
    const TrainResult r = run_training(opt, registry, std::cout, std::cerr);
    if (r.is_rank0) std::cout << "test accuracy: " << r.test_acc << "\n";
    return 0;
  } catch (const RunStopped& e) {
    if (e.report()) std::cerr << exp.name << ": " << e.what() << "\n";
    return e.exit_code();
  } catch (const UsageError& e) {
    if (cli::reports_usage_errors())
      std::cerr << exp.name << ": " << e.what() << " (" << exp.name << " --help)\n";
    return 2;
  } catch (const Error& e) {
    abort_if_distributed(e.what());  // under mpiexec: names this rank, stops every rank
    std::cerr << exp.name << ": error: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace dplab
