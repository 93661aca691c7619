// The hierarchical bucket reducer (comm/bucket_reducer.h), per bucket: reduce-scatter inside the
// node, allreduce of the node's shard across nodes (cross communicator), allgather inside the
// node, each stage in the wire type and waited for before the next (a comm_stage trace event).
// With one rank per node it is the flat allreduce over the cross communicator.
// On a CUDA arena every kernel of a bucket (the padding copy, the scaling, the copy back, the
// wire conversions) runs on the comm stream, in stream order with its collectives
// (stage_kernels_on_comm_stream: GradSync holds a CommStreamScope around reduce()), so no stage
// queues behind the backward that the compute stream runs meanwhile (issue #34), and the stages
// follow each other there without a host wait (BucketContext::then): the bucket is only posted,
// and finish() orders compute after it, as in the flat mode. With MPI each stage is waited for
// on the communication thread (a comm_stage trace event per stage).
#include "dplab/comm/bucket_reducer.h"
#include "dplab/core/backend.h"

namespace dplab {
namespace {

class HierarchicalReducer : public BucketReducer {
 public:
  std::string name() const override { return "hierarchical"; }
  bool stage_kernels_on_comm_stream() const override { return true; }
  void reduce(BucketView& bucket, BucketContext& ctx) override {
    Communicator& node = *ctx.node();
    Communicator& cross = *ctx.cross();
    Tensor g = bucket.grad;  // a handle on the arena's slice
    if (node.size() == 1) {  // nothing to do inside the node: as the flat reducer, across nodes
      Pending p =
          ctx.iallreduce(cross, g, ctx.average() ? ReduceOp::average : ReduceOp::sum, ctx.wire());
      ctx.complete(p);
      return;
    }
    // The bucket is padded to a multiple of the node size in a scratch buffer on the arena's
    // device; copies and scaling are backend kernels, so CPU and CUDA arenas take one path.
    const Backend& be = backend_for(g.device());
    const int64_t numel = g.numel();
    const int G = node.size();
    const int64_t chunk = (numel + G - 1) / G;
    Tensor full = Tensor::zeros({chunk * G}, DType::f32, g.device());
    Tensor head = full.flat_range(0, numel);
    if (numel > 0) be.ew.copy(g, head);
    Tensor shard = Tensor::empty({chunk}, DType::f32, g.device());
    // On a device the time in flight is measured there (BucketContext): from the start of the
    // bucket on the comm stream to the end of its last stage. With MPI the waits between stages
    // give each stage its trace event and its virtual end.
    Pending p = ctx.ireduce_scatter(node, full, shard, ReduceOp::sum, ctx.wire());
    ctx.then(p, "reduce_scatter (node)");
    // Average over all ranks = (sum over the node, then over nodes) / world size.
    p = ctx.iallreduce(cross, shard, ReduceOp::sum, ctx.wire());
    ctx.then(p, "allreduce (cross)");
    if (ctx.average())
      be.ew.unary(UnaryOp::mul_scalar, 1.0f / static_cast<float>(ctx.world().size()), shard, shard);
    p = ctx.iallgather(node, shard, full, ctx.wire());
    ctx.posted_last();  // after the last stage on the comm stream, before the host waits
    ctx.then(p, "allgather (node)");
    if (numel > 0) be.ew.copy(head, g);
  }
};

}  // namespace

std::unique_ptr<BucketReducer> make_hierarchical_reducer() {
  return std::make_unique<HierarchicalReducer>();
}

}  // namespace dplab
