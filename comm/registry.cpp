#include "dplab/comm/registry.h"

#include "dplab/comm/comm_options.h"

#include <functional>
#include <utility>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/comm/algorithms/crossover.h"
#include "dplab/comm/algorithms/daso.h"
#include "dplab/comm/algorithms/dcs3gd.h"
#include "dplab/comm/algorithms/diloco.h"
#include "dplab/comm/algorithms/hybrid.h"
#include "dplab/comm/algorithms/local_sgd.h"
#include "dplab/comm/algorithms/oscars.h"
#include "dplab/comm/algorithms/sgp.h"
#include "dplab/comm/algorithms/slowmo.h"
#include "dplab/comm/algorithms/streaming_diloco.h"
#include "dplab/core/error.h"
#include "dplab/core/suggest.h"
#include "dplab/core/usage_error.h"

namespace dplab {

namespace {
using Factory = std::unique_ptr<Strategy> (*)(std::shared_ptr<Topology>, const Options&);
using Reshard = ReshardPolicy (*)(const CheckpointConfig&);

std::unique_ptr<Strategy> make_local(std::shared_ptr<Topology>, const Options&) {
  return std::make_unique<LocalStrategy>();
}
ReshardPolicy local_reshard_policy(const CheckpointConfig&) {
  ReshardPolicy p;
  p.refusal = "it trains one process, so there is no other world size to continue on";
  return p;
}
std::unique_ptr<Strategy> make_allreduce(std::shared_ptr<Topology> topo, const Options& o) {
  return std::make_unique<AllReduceStrategy>(std::move(topo), o);
}

struct Builtin {
  AlgorithmInfo info;
  Factory make;
  Reshard reshard;  // its resharding policy (comm/reshard_policy.h), from its own file
};
// Every algorithm, by the name `--algo` takes (ALGORITHMS.md §1-7), with what the training
// driver needs to know of it (the help from docs/algorithms/README.md).
const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> f = {
      {{"local", "one process: forward, backward, optimizer step; no communication", true, true,
        "trains on one rank's gradients without communication"},
       make_local,
       local_reshard_policy},
      {{"allreduce", "averaged gradients every step (DDP, Horovod; docs/algorithms/allreduce.md)",
        true},
       make_allreduce,
       allreduce_reshard_policy},
      {{"hybrid", "gradients averaged in three stages of decreasing frequency (hybrid.md)"},
       make_hybrid_strategy,
       hybrid_reshard_policy},
      {{"daso", "node-local gradients every step, parameters across nodes every B steps (daso.md)"},
       make_daso_strategy,
       daso_reshard_policy},
      {{"dcs3gd", "the last update, one step stale, with delay compensation (dcs3gd.md)", false,
        false,
        "allreduces its delayed updates (the momentum step) itself, not gradients through "
        "GradSync",
        dcs3gd_run_note},
       make_dcs3gd_strategy,
       dcs3gd_reshard_policy},
      {{"crossover", "parameter segments gossiped with random peers (crossover.md)"},
       make_crossover_strategy,
       crossover_reshard_policy},
      {{"sgp", "stochastic gradient push: parameters and push-sum weights (sgp.md)", false, false,
        "gossips parameters (push-sum) and averages no gradients"},
       make_sgp_strategy,
       sgp_reshard_policy},
      {{"oscars", "parameters averaged after tau_i local steps per rank (oscars.md)", false, false,
        "averages parameters after every round of local steps, not gradients"},
       make_oscars_strategy,
       oscars_reshard_policy},
      {{"local_sgd", "parameters averaged every local_sgd.H steps (local_sgd.md)", false, false,
        "averages parameters every local_sgd.H steps, not gradients"},
       make_local_sgd_strategy,
       local_sgd_reshard_policy},
      {{"post_local_sgd", "allreduce SGD, then local SGD from post_local_sgd.switch_epoch"},
       make_post_local_sgd_strategy,
       local_sgd_reshard_policy},
      {{"diloco",
        "H inner steps, then an outer Nesterov step on the averaged outer gradient (diloco.md)",
        false, false, "averages outer gradients (parameter differences) once per round"},
       make_diloco_strategy,
       diloco_reshard_policy},
      {{"slowmo",
        "local SGD (an average every slowmo.localsgd_frequency steps, a node's ranks one worker) "
        "with an exact average and slow momentum every tau steps (slowmo.md)",
        false, false, "averages parameters once per round (with a local SGD or SGP base)"},
       make_slowmo_strategy,
       slowmo_reshard_policy},
      {{"streaming_diloco",
        "DiLoCo by fragments on a staggered, overlapped schedule (streaming_diloco.md)", false,
        false,
        "averages outer gradients (parameter differences) per fragment; "
        "streaming_diloco.quantize sends them in 8 or 4 bits (int8, int4, fp8_e4m3, fp4_e2m1)"},
       make_streaming_diloco_strategy,
       streaming_diloco_reshard_policy},
  };
  return f;
}

Factory factory(const std::string& algo) {
  for (const Builtin& b : builtins())
    if (b.info.name == algo) return b.make;
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError(fmt::format("option algo (--algo): unknown algorithm {}{}; known: {}",
                               quoted_excerpt(algo), did_you_mean(algo, strategy_names()), known));
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Builtin& b : builtins()) names.push_back(b.info.name);
  return names;
}

ReshardPolicy builtin_reshard_policy(const std::string& algo, const CheckpointConfig& config) {
  for (const Builtin& b : builtins())
    if (b.info.name == algo) return b.reshard(config);
  ReshardPolicy p;
  p.refusal = "it has no resharding policy (an algorithm registered outside dplab's own)";
  return p;
}

const std::vector<AlgorithmInfo>& builtin_algorithms() {
  static const std::vector<AlgorithmInfo> all = [] {
    std::vector<AlgorithmInfo> r;
    for (const Builtin& b : builtins()) r.push_back(b.info);
    return r;
  }();
  return all;
}

bool single_process_strategy(const std::string& algo) {
  for (const Builtin& b : builtins())
    if (b.info.name == algo) return b.info.single_process;
  return false;
}

std::unique_ptr<Strategy> make_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  const std::string algo = communicator_option_table().get_string(opt, "algo");
  const Factory f = factory(algo);
  DPLAB_CHECK(topo != nullptr || single_process_strategy(algo),
              "algorithm {} runs on several ranks: it needs a topology", algo);
  return f(std::move(topo), opt);
}

std::unique_ptr<Strategy> make_strategy(const Options& opt) {
  const std::string algo = communicator_option_table().get_string(opt, "algo");
  factory(algo);  // an unknown name fails before MPI starts
  if (single_process_strategy(algo)) return make_strategy(nullptr, opt);
  return make_strategy(std::make_shared<Topology>(Topology::from_options(opt)), opt);
}

}  // namespace dplab
