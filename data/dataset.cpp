#include "dplab/data/dataset.h"

namespace dplab {

Sample Dataset::get(int64_t index) const {
  DPLAB_CHECK(index >= 0 && index < size(), "{}: sample index {} out of range [0, {})", describe(),
              index, size());
  Sample s;
  s.image = Tensor::empty(sample_shape());
  s.label = get_into(index, s.image.data<float>());
  return s;
}

}  // namespace dplab
