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
using Factory = std::unique_ptr<Strategy> (*)(const Options&);

std::unique_ptr<Strategy> make_local(const Options&) {
  return std::make_unique<LocalStrategy>();
}
std::unique_ptr<Strategy> make_allreduce(const Options& o) {
  return std::make_unique<AllReduceStrategy>(o);
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
      {"local_sgd",
       [](const Options& o) {
         return make_local_sgd_strategy(std::make_shared<Topology>(Topology::from_options(o)), o);
       }},
      {"post_local_sgd",
       [](const Options& o) {
         return make_post_local_sgd_strategy(std::make_shared<Topology>(Topology::from_options(o)),
                                             o);
       }},
      {"diloco",
       [](const Options& o) {
         return make_diloco_strategy(std::make_shared<Topology>(Topology::from_options(o)), o);
       }},
      {"slowmo",
       [](const Options& o) {
         return make_slowmo_strategy(std::make_shared<Topology>(Topology::from_options(o)), o);
       }},
      {"streaming_diloco",
       [](const Options& o) {
         return make_streaming_diloco_strategy(
             std::make_shared<Topology>(Topology::from_options(o)), o);
       }},
  };
  return f;
}
}  // namespace

std::vector<std::string> strategy_names() {
  std::vector<std::string> names;
  for (auto& [n, f] : factories()) names.push_back(n);
  return names;
}

std::unique_ptr<Strategy> make_strategy(const Options& opt) {
  const std::string algo = opt.get_string("algo", "local");
  for (auto& [n, f] : factories())
    if (n == algo) return f(opt);
  std::string known;
  for (auto& n : strategy_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError(fmt::format("option algo (--algo): unknown algorithm {}{}; known: {}",
                               quoted_excerpt(algo), did_you_mean(algo, strategy_names()), known));
}

}  // namespace dplab
