#include "dplab/comm/algorithms/algo_state.h"

#include <cmath>

#include "dplab/core/error.h"

namespace dplab {

namespace {
std::string where(const StateDict& in) {
  return in.origin().empty() ? std::string("state") : in.origin();
}
}  // namespace

void save_algorithm_name(StateDict& out, const std::string& algo) {
  out.put_string("algorithm", algo);
}

void check_algorithm_name(const StateDict& in, const std::string& algo) {
  const std::string& saved = in.get_string("algorithm");
  DPLAB_CHECK(saved == algo, "{}: state 'algorithm' is '{}', this run's algorithm is '{}'",
              where(in), saved, algo);
}

void restore_tensor(const StateDict& in, const std::string& algo, const std::string& key,
                    Tensor dst) {
  const Tensor& src = in.tensor(key);
  DPLAB_CHECK(src.dtype() == dst.dtype() && src.shape() == dst.shape(),
              "{}: {} state tensor '{}' is {} {}, this run needs {} {} (another model or "
              "configuration?)",
              where(in), algo, key, dtype_name(src.dtype()), shape_str(src.shape()),
              dtype_name(dst.dtype()), shape_str(dst.shape()));
  dst.copy_(src);
}

int64_t state_int(const StateDict& in, const std::string& algo, const std::string& key, int64_t lo,
                  int64_t hi) {
  const int64_t v = in.get_int(key);
  DPLAB_CHECK(v >= lo && v <= hi, "{}: {} state '{}' = {}: expected a value in [{}, {}]", where(in),
              algo, key, v, lo, hi);
  return v;
}

double state_finite(const StateDict& in, const std::string& algo, const std::string& key) {
  const double v = in.get_double(key);
  DPLAB_CHECK(std::isfinite(v), "{}: {} state '{}' = {}: expected a finite number", where(in), algo,
              key, v);
  return v;
}

}  // namespace dplab
