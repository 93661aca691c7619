// Streaming DiLoCo's option keys (read by StreamingDiLoCoOptions::from_options,
// streaming_diloco.cpp; the constraints between H, fragments and fragment_sync_delay are checked
// by StreamingSchedule::check, and fragments against the model's tensors or blocks at setup).
#include "dplab/comm/algorithms/algorithm_options.h"

namespace dplab {

const OptionTable& streaming_diloco_option_table() {
  static const OptionTable t({
      {"streaming_diloco.H", "50", "inner steps between two syncs of the same fragment",
       integer(1)},
      {"streaming_diloco.fragments", "2",
       "P: fragments (cut at tensor boundaries), synchronised on a staggered schedule", integer(1)},
      {"streaming_diloco.fragment_pattern", "contiguous",
       "contiguous: P ranges of the arena of about equal size; strided: the model's blocks dealt "
       "round-robin to the P fragments (the paper's pattern)",
       choice({"contiguous", "strided"})},
      {"streaming_diloco.fragment_sync_delay", "1",
       "tau: inner steps a fragment's allreduce overlaps before it is applied (< H / P)",
       integer(0)},
      {"streaming_diloco.fragment_update_alpha", "0.5",
       "alpha: local share when mixing, local = (1 - alpha) global + alpha local", number(0, 1)},
      {"streaming_diloco.wire", "f32",
       "wire type of the outer gradients' allreduce: f32, bf16 or f16 (f32 accumulation)",
       choice({"f32", "bf16", "f16"})},
      {"streaming_diloco.quantize", "none",
       "none, int8, int4 (linear codes), fp8_e4m3 or fp4_e2m1 (floats): outer gradients "
       "quantised per block (one f32 scale each) and averaged by a quantised reduce-scatter and "
       "allgather, summed in f32 (replaces the allreduce; wire must be f32)",
       choice({"none", "int8", "int4", "fp8_e4m3", "fp4_e2m1"})},
      {"streaming_diloco.quantize_block", "256",
       "elements per quantisation scale (streaming_diloco.quantize)", integer(1)},
      {"streaming_diloco.outer_lr", "0.7", "learning rate of the outer SGD", number(0)},
      {"streaming_diloco.outer_momentum", "0.9", "momentum of the outer SGD (0: plain SGD)",
       number(0, 1, true)},
      {"streaming_diloco.outer_nesterov", "true",
       "Nesterov outer momentum (ignored when momentum is 0)", boolean()},
      {"streaming_diloco.round_spans_epochs", "true",
       "true: the fragment schedule runs across epochs (the epoch's test_acc evaluates the "
       "global model, test_acc_rank0 rank 0's mixed local one); false: every epoch ends with a "
       "full sync of all fragments",
       boolean()},
  });
  return t;
}

}  // namespace dplab
