#include "dplab/comm/registry.h"

#include "dplab/core/error.h"

namespace dplab {

std::vector<std::string> strategy_names() { return {"local"}; }

std::unique_ptr<Strategy> make_strategy(const Options& opt) {
  const std::string algo = opt.get_string("algo", "local");
  if (algo == "local") return std::make_unique<LocalStrategy>();
  DPLAB_FAIL("unknown algorithm '{}' (option algo / --algo): known: local", algo);
}

}  // namespace dplab
