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
  std::string name;
  Factory make;
  Reshard reshard;  // its resharding policy (comm/reshard_policy.h), from its own file
};
// Every algorithm, by the name `--algo` takes (ALGORITHMS.md §1-7).
const std::vector<Builtin>& builtins() {
  static const std::vector<Builtin> f = {
      {"local", make_local, local_reshard_policy},
      {"allreduce", make_allreduce, allreduce_reshard_policy},
      {"hybrid", make_hybrid_strategy, hybrid_reshard_policy},
      {"daso", make_daso_strategy, daso_reshard_policy},
      {"dcs3gd", make_dcs3gd_strategy, dcs3gd_reshard_policy},
      {"crossover", make_crossover_strategy, crossover_reshard_policy},
      {"sgp", make_sgp_strategy, sgp_reshard_policy},
      {"oscars", make_oscars_strategy, oscars_reshard_policy},
      {"local_sgd", make_local_sgd_strategy, local_sgd_reshard_policy},
      {"post_local_sgd", make_post_local_sgd_strategy, local_sgd_reshard_policy},
      {"diloco", make_diloco_strategy, diloco_reshard_policy},
      {"slowmo", make_slowmo_strategy, slowmo_reshard_policy},
      {"streaming_diloco", make_streaming_diloco_strategy, streaming_diloco_reshard_policy},
  };
  return f;
}

Factory factory(const std::string& algo) {
  for (const Builtin& b : builtins())
    if (b.name == algo) return b.make;
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError(fmt::format("option algo (--algo): unknown algorithm {}{}; known: {}",
                               quoted_excerpt(algo), did_you_mean(algo, strategy_names()), known));
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (const Builtin& b : builtins()) names.push_back(b.name);
  return names;
}

ReshardPolicy builtin_reshard_policy(const std::string& algo, const CheckpointConfig& config) {
  for (const Builtin& b : builtins())
    if (b.name == algo) return b.reshard(config);
  ReshardPolicy p;
  p.refusal = "it has no resharding policy (an algorithm registered outside dplab's own)";
  return p;
}

bool single_process_strategy(const std::string& algo) {
  return algo == "local";
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
