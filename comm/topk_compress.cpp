#include "dplab/comm/topk_compress.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <fmt/format.h>

#include "dplab/comm/algorithms/algo_state.h"
#include "dplab/core/error.h"

namespace dplab {

TopKCompressor::TopKCompressor(const CompressOptions& opt,
                               const std::vector<std::vector<BucketTensor>>& buckets) {
  DPLAB_CHECK(opt.ratio > 0 && opt.ratio <= 1, "topk.ratio: expected (0, 1], got {}", opt.ratio);
  for (const auto& ts : buckets) {
    Bucket bk;
    for (const auto& t : ts) bk.numel = std::max(bk.numel, t.offset + t.numel);
    DPLAB_CHECK(bk.numel < (int64_t(1) << 31), "topk: a bucket of {} elements needs 64-bit indices",
                bk.numel);
    bk.k = std::clamp<int64_t>(static_cast<int64_t>(opt.ratio * double(bk.numel)), 1,
                               std::max<int64_t>(bk.numel, 1));
    bk.residual = Tensor::zeros({bk.numel});
    bk.idx = Tensor::zeros({bk.k}, DType::i32);
    bk.val = Tensor::zeros({bk.k});
    buckets_.push_back(std::move(bk));
  }
}

void TopKCompressor::reduce(int b, const Tensor& g, Communicator& comm, bool average,
                            BucketContext& ctx) {
  Bucket& bk = buckets_[b];
  DPLAB_CHECK(g.numel() == bk.numel, "topk: bucket {} has {} elements, planned {}", b, g.numel(),
              bk.numel);
  if (bk.numel == 0) return;
  float* gp = g.data<float>();
  float* r = bk.residual.data<float>();
  for (int64_t i = 0; i < bk.numel; ++i) r[i] += gp[i];  // r now holds g' = g + r
  // The k largest |g'|, ties to the lower index (a strict total order: the same set on any
  // platform), sent in ascending index order.
  std::vector<int32_t> order(static_cast<size_t>(bk.numel));
  std::iota(order.begin(), order.end(), 0);
  auto larger = [r](int32_t a, int32_t c) {
    const float fa = std::abs(r[a]), fc = std::abs(r[c]);
    return fa > fc || (fa == fc && a < c);
  };
  std::nth_element(order.begin(), order.begin() + (bk.k - 1), order.end(), larger);
  std::sort(order.begin(), order.begin() + bk.k);
  int32_t* pi = bk.idx.data<int32_t>();
  float* pv = bk.val.data<float>();
  for (int64_t j = 0; j < bk.k; ++j) {
    pi[j] = order[size_t(j)];
    pv[j] = r[pi[j]];
    r[pi[j]] = 0;  // r = g' - sent
  }
  const int world = comm.size();
  Tensor all_idx = Tensor::empty({world * bk.k}, DType::i32);
  Tensor all_val = Tensor::empty({world * bk.k});
  ctx.allgather(comm, bk.idx, all_idx);
  ctx.allgather(comm, bk.val, all_val);
  std::fill(gp, gp + bk.numel, 0.f);
  const int32_t* ai = all_idx.data<int32_t>();
  const float* av = all_val.data<float>();
  for (int64_t j = 0; j < world * bk.k; ++j) {
    DPLAB_CHECK(ai[j] >= 0 && ai[j] < bk.numel, "topk: bucket {}: rank {} sent index {} of {}", b,
                j / bk.k, ai[j], bk.numel);
    gp[ai[j]] += av[j];  // rank order: rank 0's block first
  }
  if (average)
    for (int64_t i = 0; i < bk.numel; ++i) gp[i] /= static_cast<float>(world);
}

void TopKCompressor::save_state(StateDict& out) const {
  out.put_string("compress", "topk");
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].numel > 0) out.put_tensor(fmt::format("b{}.residual", b), buckets_[b].residual);
}

void TopKCompressor::load_state(const StateDict& in) {
  const std::string& kind = in.get_string("compress");
  DPLAB_CHECK(kind == "topk", "{}: gradient compression state is '{}', this run uses topk",
              in.origin(), kind);
  for (size_t b = 0; b < buckets_.size(); ++b)
    if (buckets_[b].numel > 0)
      restore_tensor(in, "topk", fmt::format("b{}.residual", b), buckets_[b].residual);
}

}  // namespace dplab
