// The compression's bucket reducer (comm/grad_compress.h): PowerSGD or top-k, flat or
// hierarchical.
#include "dplab/comm/grad_compress.h"
#include "dplab/comm/grad_sync.h"
#include "dplab/core/error.h"

namespace dplab {

CompressedReducer::CompressedReducer(const ReducerSetup& setup)
    : kind_(setup.options.compress.kind), hierarchical_(setup.options.hierarchical) {
  const GradSyncOptions& opt = setup.options;
  DPLAB_CHECK(opt.compress.enabled(), "GradSync: the compressed reducer needs compress set");
  DPLAB_CHECK(setup.device.is_cpu(),
              "GradSync: gradient compression ({}) needs a CPU arena, got {}", opt.compress.kind,
              setup.device.str());
  DPLAB_CHECK(opt.wire == DType::f32, "GradSync: gradient compression ({}) needs wire f32, got {}",
              opt.compress.kind, dtype_name(opt.wire));
  DPLAB_CHECK(!hierarchical_ || (setup.node != nullptr && setup.cross != nullptr),
              "GradSync: hierarchical mode needs node and cross communicators (a Topology)");
  compressor_ = make_grad_compressor(opt.compress, setup.tensors);
}

void CompressedReducer::reduce(BucketView& bucket, BucketContext& ctx) {
  const Tensor& g = bucket.grad;
  const int b = bucket.index;
  if (!hierarchical_) {
    compressor_->reduce(b, g, ctx.world(), ctx.average(), ctx);
    return;
  }
  // The exact sum inside the node on its first rank, the compressed exchange of the node sums
  // among the nodes' first ranks, the result broadcast inside the node.
  Communicator& node = *ctx.node();
  const int G = node.size();
  const bool leader = node.rank() == 0;
  if (G > 1) ctx.reduce(node, g, 0, ReduceOp::sum);
  if (leader) {
    compressor_->reduce(b, g, *ctx.cross(), /*average=*/false, ctx);
    if (ctx.average()) {  // the mean over all ranks, divided as the flat top-k does
      float* p = g.data<float>();
      const float W = static_cast<float>(ctx.world().size());
      for (int64_t i = 0; i < g.numel(); ++i) p[i] /= W;
    }
  }
  if (G > 1) ctx.broadcast(node, g, 0);
}

}  // namespace dplab
