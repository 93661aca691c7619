// The flat bucket reducer (comm/bucket_reducer.h): one allreduce of the bucket over the world, in
// the wire type (f32, or 16-bit: the communicator converts and accumulates in f32), averaging or
// summing. On a device (NCCL) it is only posted on the comm stream, its wire conversions too
// (stage_kernels_on_comm_stream); GradSync::finish() orders it before compute without a host
// wait.
#include "dplab/comm/bucket_reducer.h"

namespace dplab {
namespace {

class FlatReducer : public BucketReducer {
 public:
  std::string name() const override { return "flat"; }
  bool stage_kernels_on_comm_stream() const override { return true; }
  void reduce(BucketView& bucket, BucketContext& ctx) override {
    const ReduceOp op = ctx.average() ? ReduceOp::average : ReduceOp::sum;
    Pending p = ctx.iallreduce(ctx.world(), bucket.grad, op, ctx.wire());
    ctx.complete(p);
  }
};

}  // namespace

std::unique_ptr<BucketReducer> make_flat_reducer() {
  return std::make_unique<FlatReducer>();
}

}  // namespace dplab
