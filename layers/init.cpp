#include "dplab/layers/init.h"

#include <vector>

namespace dplab {

void uniform_(Tensor& t, PhiloxStream& rng, double bound) {
  const float b = static_cast<float>(bound);
  std::vector<float> v(static_cast<size_t>(t.numel()));
  for (auto& x : v) x = rng.uniform(-b, b);
  t.copy_(Tensor::from_vector(v, t.shape()).to(t.device()));
}

}  // namespace dplab
