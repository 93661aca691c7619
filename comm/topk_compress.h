// Top-k sparsification with error feedback for GradSync (comm/grad_compress.h has the
// algorithm; GRACE's TopKCompressor with residual memory). Exposed as a class so tests can read
// its residuals and the last payload.
#pragma once
#include <vector>

#include "dplab/comm/grad_compress.h"

namespace dplab {

class TopKCompressor : public GradCompressor {
 public:
  TopKCompressor(const CompressOptions& opt, const std::vector<std::vector<BucketTensor>>& buckets);
  void reduce(int b, const Tensor& g, Communicator& comm, bool average,
              BucketContext& ctx) override;
  void save_state(StateDict& out) const override;
  void load_state(const StateDict& in) override;

  int64_t k(int b) const { return buckets_[b].k; }
  const Tensor& residual(int b) const { return buckets_[b].residual; }
  // What this rank sent for bucket b at its last reduce: indices (i32, ascending) and values.
  const Tensor& sent_indices(int b) const { return buckets_[b].idx; }
  const Tensor& sent_values(int b) const { return buckets_[b].val; }

 private:
  struct Bucket {
    int64_t numel = 0, k = 0;
    Tensor residual, idx, val;
  };
  std::vector<Bucket> buckets_;
};

}  // namespace dplab
