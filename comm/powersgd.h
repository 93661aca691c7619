// PowerSGD gradient compression for GradSync (comm/grad_compress.h has the algorithm; Vogels et
// al., 2019). Exposed as a class so tests can read its residuals and Q.
#pragma once
#include <vector>

#include "dplab/comm/grad_compress.h"

namespace dplab {

class PowerSgdCompressor : public GradCompressor {
 public:
  PowerSgdCompressor(const CompressOptions& opt,
                     const std::vector<std::vector<BucketTensor>>& buckets);
  void reduce(int b, const Tensor& g, Communicator& comm, bool average,
              BucketContext& ctx) override;
  void end_step() override { ++step_; }
  // The last step was at or after start_step, and some bucket has a matrix worth compressing.
  bool compressing() const override;
  void save_state(StateDict& out) const override;
  void load_state(const StateDict& in) override;

  // One tensor of a bucket as PowerSGD sees it.
  struct Matrix {
    int64_t offset = 0, numel = 0;  // in the bucket
    int64_t n = 0, m = 0, r = 0;    // n x m at rank r (r = 0: uncompressed)
    int64_t p_offset = 0, q_offset = 0;
  };
  const std::vector<Matrix>& matrices(int b) const { return buckets_[b].mats; }
  // Error-feedback memory of bucket b (zero on its uncompressed tensors).
  const Tensor& residual(int b) const { return buckets_[b].residual; }
  // Bucket b's Q (the compressed tensors' m x r blocks, row-major, at their q_offset).
  const Tensor& q(int b) const { return buckets_[b].q; }
  int64_t step() const { return step_; }

 private:
  struct Bucket {
    std::vector<Matrix> mats;
    int64_t numel = 0, p_numel = 0, q_numel = 0, u_numel = 0;
    Tensor residual, p, q, u;  // u: the uncompressed tensors, packed
    bool q_ready = false;      // Q drawn (warm start keeps it)
  };
  void init_q(int b);
  CompressOptions opt_;
  std::vector<Bucket> buckets_;
  int64_t step_ = 0;  // synchronised steps so far
};

// Gram-Schmidt on the r columns of the rows x r row-major matrix x (double accumulation); a zero
// column is left zero (no epsilon: PyTorch's default orthogonalization_epsilon = 0, but its zero
// column would become NaN).
void orthogonalize_columns(float* x, int64_t rows, int64_t r);

}  // namespace dplab
