#include "dplab/data/sampler.h"

#include <numeric>

#include "dplab/core/error.h"
#include "dplab/core/philox.h"

namespace dplab {

std::vector<int64_t> philox_permutation(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t(0));
  PhiloxStream rng(seed, stream);
  for (int64_t i = n - 1; i > 0; --i) {
    const int64_t j = int64_t(rng.below(uint64_t(i + 1)));
    std::swap(p[size_t(i)], p[size_t(j)]);
  }
  return p;
}

DistributedSampler::DistributedSampler(int64_t dataset_size, const SamplerOptions& opt)
    : n_(dataset_size), opt_(opt) {
  DPLAB_CHECK(opt.world_size >= 1, "DistributedSampler: world size {} < 1", opt.world_size);
  DPLAB_CHECK(opt.rank >= 0 && opt.rank < opt.world_size,
              "DistributedSampler: rank {} not in [0, {})", opt.rank, opt.world_size);
  DPLAB_CHECK(dataset_size > 0, "DistributedSampler: empty dataset");
  const int64_t w = opt.world_size;
  num_samples_ = opt.drop_last ? n_ / w : (n_ + w - 1) / w;
  DPLAB_CHECK(num_samples_ > 0,
              "DistributedSampler: drop_last with {} samples and {} ranks leaves nothing", n_, w);
}

std::vector<int64_t> DistributedSampler::global_order() const {
  std::vector<int64_t> idx;
  if (opt_.shuffle) {
    idx = philox_permutation(n_, opt_.seed, uint64_t(epoch_));
  } else {
    idx.resize(size_t(n_));
    std::iota(idx.begin(), idx.end(), int64_t(0));
  }
  const int64_t total = total_size();
  if (total <= n_) {
    idx.resize(size_t(total));
  } else {
    for (int64_t i = n_; i < total; ++i) idx.push_back(idx[size_t((i - n_) % n_)]);
  }
  return idx;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all = global_order();
  std::vector<int64_t> mine;
  mine.reserve(size_t(num_samples_));
  for (size_t i = size_t(opt_.rank); i < all.size(); i += size_t(opt_.world_size))
    mine.push_back(all[i]);
  return mine;
}

}  // namespace dplab
