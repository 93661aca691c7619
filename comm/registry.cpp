#include "dplab/comm/registry.h"

#include <functional>
#include <utility>

#include "dplab/comm/algorithms/allreduce.h"
#include "dplab/core/error.h"

// Algorithms being written in parallel register here as their headers appear; each header
// declares `std::unique_ptr<Strategy> make_<name>_strategy(const Options&)`.
#if __has_include("dplab/comm/algorithms/hybrid.h")
#include "dplab/comm/algorithms/hybrid.h"
#define DPLAB_HAS_HYBRID 1
#endif
#if __has_include("dplab/comm/algorithms/daso.h")
#include "dplab/comm/algorithms/daso.h"
#define DPLAB_HAS_DASO 1
#endif
#if __has_include("dplab/comm/algorithms/dcs3gd.h")
#include "dplab/comm/algorithms/dcs3gd.h"
#define DPLAB_HAS_DCS3GD 1
#endif
#if __has_include("dplab/comm/algorithms/crossover.h")
#include "dplab/comm/algorithms/crossover.h"
#define DPLAB_HAS_CROSSOVER 1
#endif
#if __has_include("dplab/comm/algorithms/sgp.h")
#include "dplab/comm/algorithms/sgp.h"
#define DPLAB_HAS_SGP 1
#endif
#if __has_include("dplab/comm/algorithms/oscars.h")
#include "dplab/comm/algorithms/oscars.h"
#define DPLAB_HAS_OSCARS 1
#endif
#if __has_include("dplab/comm/algorithms/local_sgd.h")
#include "dplab/comm/algorithms/local_sgd.h"
#define DPLAB_HAS_LOCAL_SGD 1
#endif

namespace dplab {

// While the algorithms are being written, a factory whose header exists but whose
// implementation has not landed yet is a weak (null) reference and is skipped.
#ifdef DPLAB_HAS_HYBRID
__attribute__((weak)) std::unique_ptr<Strategy> make_hybrid_strategy(const Options&);
#endif
#ifdef DPLAB_HAS_DASO
__attribute__((weak)) std::unique_ptr<Strategy> make_daso_strategy(const Options&);
#endif
#ifdef DPLAB_HAS_DCS3GD
__attribute__((weak)) std::unique_ptr<Strategy> make_dcs3gd_strategy(const Options&);
#endif
#ifdef DPLAB_HAS_CROSSOVER
__attribute__((weak)) std::unique_ptr<Strategy> make_crossover_strategy(const Options&);
#endif
#ifdef DPLAB_HAS_SGP
__attribute__((weak)) std::unique_ptr<Strategy> make_sgp_strategy(const Options&);
#endif
#ifdef DPLAB_HAS_OSCARS
__attribute__((weak)) std::unique_ptr<Strategy> make_oscars_strategy(const Options&);
#endif
#ifdef DPLAB_HAS_LOCAL_SGD
__attribute__((weak)) std::unique_ptr<Strategy> make_local_sgd_strategy(const Options&);
__attribute__((weak)) std::unique_ptr<Strategy> make_post_local_sgd_strategy(const Options&);
#endif

namespace {
using Factory = std::function<std::unique_ptr<Strategy>(const Options&)>;

std::vector<std::pair<std::string, Factory>> factories() {
  std::vector<std::pair<std::string, Factory>> f;
  f.emplace_back("local", [](const Options&) { return std::make_unique<LocalStrategy>(); });
  f.emplace_back("allreduce",
                 [](const Options& o) { return std::make_unique<AllReduceStrategy>(o); });
#ifdef DPLAB_HAS_HYBRID
  if (make_hybrid_strategy) f.emplace_back("hybrid", make_hybrid_strategy);
#endif
#ifdef DPLAB_HAS_DASO
  if (make_daso_strategy) f.emplace_back("daso", make_daso_strategy);
#endif
#ifdef DPLAB_HAS_DCS3GD
  if (make_dcs3gd_strategy) f.emplace_back("dcs3gd", make_dcs3gd_strategy);
#endif
#ifdef DPLAB_HAS_CROSSOVER
  if (make_crossover_strategy) f.emplace_back("crossover", make_crossover_strategy);
#endif
#ifdef DPLAB_HAS_SGP
  if (make_sgp_strategy) f.emplace_back("sgp", make_sgp_strategy);
#endif
#ifdef DPLAB_HAS_OSCARS
  if (make_oscars_strategy) f.emplace_back("oscars", make_oscars_strategy);
#endif
#ifdef DPLAB_HAS_LOCAL_SGD
  if (make_local_sgd_strategy) f.emplace_back("local_sgd", make_local_sgd_strategy);
  if (make_post_local_sgd_strategy) f.emplace_back("post_local_sgd", make_post_local_sgd_strategy);
#endif
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
  DPLAB_FAIL("unknown algorithm '{}' (option algo / --algo): known: {}", algo, known);
}

}  // namespace dplab
