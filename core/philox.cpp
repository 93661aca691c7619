#include "dplab/core/philox.h"

#include <cmath>

namespace dplab {

float PhiloxStream::normal() {
  float u1 = uniform();
  float u2 = uniform();
  if (u1 < 1e-12f) u1 = 1e-12f;
  return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.28318530717958647692f * u2);
}

}  // namespace dplab
