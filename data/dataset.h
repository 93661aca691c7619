// Dataset: random access to (image, label) samples. Datasets are immutable after construction,
// so loader worker threads may call get() concurrently.
#pragma once
#include <cstdint>
#include <string>

#include "dplab/core/philox.h"
#include "dplab/core/tensor.h"

namespace dplab {

struct Sample {
  Tensor image;  // f32, sample_shape()
  int64_t label = 0;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual Shape sample_shape() const = 0;
  virtual int num_classes() const = 0;
  virtual std::string describe() const = 0;
  // Writes sample `index`'s image (sample_shape(), f32, contiguous) to `out` and returns its
  // label: the allocation-free path the batch loader uses.
  virtual int64_t get_into(int64_t index, float* out) const = 0;
  // The loader's entry point: like get_into, for datasets whose samples are random
  // (decode-time augmentation); `rng` is keyed by (seed, epoch, index). Default: get_into.
  virtual int64_t get_random_into(int64_t index, float* out, PhiloxStream& rng) const {
    (void)rng;
    return get_into(index, out);
  }
  Sample get(int64_t index) const;
};

}  // namespace dplab
