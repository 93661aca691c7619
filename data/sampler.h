// DistributedSampler with PyTorch's semantics (torch.utils.data.DistributedSampler):
//   - shuffle: a permutation of [0, N) drawn from Philox keyed by (seed, stream = epoch), so the
//     order is a pure function of (seed, epoch), identical on every rank;
//   - drop_last = false: pad to ceil(N / world) * world by repeating indices from the start
//     (cyclically if the padding is longer than N);
//     drop_last = true: truncate to floor(N / world) * world;
//   - rank r takes indices[r], indices[r + world], ... (a strided shard).
#pragma once
#include <cstdint>
#include <vector>

namespace dplab {

struct SamplerOptions {
  int rank = 0;
  int world_size = 1;
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler {
 public:
  DistributedSampler(int64_t dataset_size, const SamplerOptions& opt);
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }
  // Samples this rank sees per epoch.
  int64_t num_samples() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * opt_.world_size; }
  // This rank's indices for the current epoch (a pure function of seed, epoch, rank, world).
  std::vector<int64_t> indices() const;
  // The full (padded or truncated) order before sharding, for every rank.
  std::vector<int64_t> global_order() const;
  const SamplerOptions& options() const { return opt_; }

 private:
  int64_t n_;
  SamplerOptions opt_;
  int64_t num_samples_;
  int64_t epoch_ = 0;
};

// The seeded permutation the sampler uses: Fisher-Yates with Philox draws keyed by
// (seed, stream).
std::vector<int64_t> philox_permutation(int64_t n, uint64_t seed, uint64_t stream);

}  // namespace dplab
