#include "dplab/comm/registry.h"

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

std::unique_ptr<Strategy> make_local(std::shared_ptr<Topology>, const Options&) {
  return std::make_unique<LocalStrategy>();
}
std::unique_ptr<Strategy> make_allreduce(std::shared_ptr<Topology> topo, const Options& o) {
  return std::make_unique<AllReduceStrategy>(std::move(topo), o);
}
// Every algorithm, by the name `--algo` takes (ALGORITHMS.md §1-7).
const std::vector<std::pair<std::string, Factory>>& factories() {
  static const std::vector<std::pair<std::string, Factory>> f = {
      {"local", make_local},
      {"allreduce", make_allreduce},
      {"hybrid", make_hybrid_strategy},
      {"daso", make_daso_strategy},
      {"dcs3gd", make_dcs3gd_strategy},
      {"crossover", make_crossover_strategy},
      {"sgp", make_sgp_strategy},
      {"oscars", make_oscars_strategy},
      {"local_sgd", make_local_sgd_strategy},
      {"post_local_sgd", make_post_local_sgd_strategy},
      {"diloco", make_diloco_strategy},
      {"slowmo", make_slowmo_strategy},
      {"streaming_diloco", make_streaming_diloco_strategy},
  };
  return f;
}

Factory factory(const std::string& algo) {
  for (auto& [n, f] : factories())
    if (n == algo) return f;
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError(fmt::format("option algo (--algo): unknown algorithm {}{}; known: {}",
                               quoted_excerpt(algo), did_you_mean(algo, strategy_names()), known));
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (auto& [n, f] : factories()) names.push_back(n);
  return names;
}

bool single_process_strategy(const std::string& algo) {
  return algo == "local";
}

std::unique_ptr<Strategy> make_strategy(std::shared_ptr<Topology> topo, const Options& opt) {
  const std::string algo = opt.get_string("algo", "local");
  const Factory f = factory(algo);
  DPLAB_CHECK(topo != nullptr || single_process_strategy(algo),
              "algorithm {} runs on several ranks: it needs a topology", algo);
  return f(std::move(topo), opt);
}

std::unique_ptr<Strategy> make_strategy(const Options& opt) {
  const std::string algo = opt.get_string("algo", "local");
  factory(algo);  // an unknown name fails before MPI starts
  if (single_process_strategy(algo)) return make_strategy(nullptr, opt);
  return make_strategy(std::make_shared<Topology>(Topology::from_options(opt)), opt);
}

}  // namespace dplab
