// Non-finite values in training: a loss or gradient that is inf or NaN stops the run (or, with
// nonfinite = skip, drops the step), and no checkpoint with a non-finite tensor is ever written.
//
//   A rank whose loss or gradient is non-finite never applies that update (under both
//   policies): its step is dropped (no optimizer update, its gradients zeroed, its loss left
//   out of the metrics), as the f16 loss scaler does. With gradients averaged in after_backward
//   (allreduce and the other synchronous algorithms) every rank sees the same values and drops
//   the same step; otherwise each rank drops its own.
//   option nonfinite = stop   then every rank stops, at the same tick (StepAgreement: at most
//                             StepAgreement::kLag ticks later, or at the end of the epoch), with
//                             a message naming the global step, the rank(s) and the tensor (a
//                             parameter's name, or "loss"); exit status 3; no checkpoint is
//                             written, so the last good one stays as it was.
//   option nonfinite = skip   training goes on; the dropped steps are counted
//                             ("nonfinite_skipped_steps" in the epoch and final metrics records:
//                             rank 0's count).
// The per-step check is one fused read-only pass over the loss and the flat gradient arena
// (OptimKernels::find_nonfinite) and one read back of two flags: the same cost pattern as
// GradScaler's found-inf check. On a GPU that read is a host synchronisation per step, which
// option nonfinite_check = next_step (auto's choice there) removes: the flags travel
// to the host on their own and are read a step later (NonfiniteCheck below). The exception to
// "never applies that update" is then that one: under stop the failing step's update is
// applied, and the run stops at the agreed tick with nothing written, as always. Under amp = f16
// the loss scaler already handles inf/NaN gradients (they are expected while the scale settles), so
// only the loss is checked there. Ranks agree through StepAgreement (train/loop/step_agreement.h);
// before a checkpoint every rank checks its whole state and they agree before anything is written.
#pragma once
#include <string>
#include <vector>

#include "dplab/core/error.h"
#include "dplab/core/host_readback.h"
#include "dplab/core/param_arena.h"
#include "dplab/core/state_dict.h"
#include "dplab/train/loop/run_stopped.h"

namespace dplab {

enum class NonfinitePolicy { stop, skip };
// Option nonfinite: "stop" or "skip"; anything else throws naming the option.
NonfinitePolicy parse_nonfinite_policy(const std::string& value);

// Indices (ascending) of the tensors holding an inf or NaN. Floating tensors only (f32 as they
// are, bf16/f16 through an f32 copy); integer tensors are always finite. One fused pass per
// tensor into a flags tensor on the tensors' device and one read back per device, so a CUDA
// state costs one host synchronisation, not one per tensor.
std::vector<size_t> nonfinite_indices(const std::vector<Tensor>& tensors);
// The names of the tensors holding an inf or NaN, in order.
std::vector<std::string> nonfinite_names(const std::vector<NamedTensor>& tensors);
// The non-finite entries of a StateDict: tensor names and double values spelled inf or nan.
std::vector<std::string> nonfinite_entries(const StateDict& state);
// "'a'", "'a' and 'b'", "'a', 'b' and 3 more": names for a message.
std::string name_list(const std::vector<std::string>& names, size_t show = 3);

// After a step whose loss was non-finite: throws cross-entropy's target error ("target[i] = v
// is outside the class range [0, C)", core/kernels/loss.h) when a label of the batch is outside
// the logits' C classes. The CPU backends throw that in the forward already; on CUDA a bad
// target shows only as a NaN loss (the forward does not wait for the device to check it), so
// this names it, whatever the nonfinite policy: a bad label is a data error, not a step to
// skip. Reads the labels back: on the failure path only.
void check_targets_of_nonfinite_step(const Tensor& labels, const Tensor& logits);

// What one step's check found: its loss, its gradients (the arena as it is after the step's
// backward: under accumulate_steps the group's sum so far), and, for a posted check, whether a
// loss of the step's accumulation group so far was non-finite (the step's own included).
struct NonfiniteFlags {
  bool loss = false, grads = false, group_loss = false;
  bool any() const { return loss || grads; }
  // Whether the update at the end of the group is dropped: some loss of the group, or the summed
  // gradients (an inf or NaN in any batch's gradient stays in the sum).
  bool group_dropped() const { return grads || group_loss; }
};

// Option nonfinite_check: when the host reads a step's verdict.
//   every_step  at once, after the step's backward (one host synchronisation per step);
//   next_step   a step later (issue #34): the check runs on the device and its flags come
//               back on their own (core/host_readback.h), read after the next step's backward
//               is enqueued, so on a GPU the host never waits for the device to drain. The
//               message then says "loss" or "a gradient" without naming the tensor (its
//               gradients are gone by then: every_step names it).
//               Under nonfinite = stop the failing step's update is applied before the run
//               stops (its parameters are never written: every checkpoint, and the end, read
//               the verdict first).
//               Under nonfinite = skip the device decides: the optimizer step takes the flags
//               (Optimizer::step_unless) and drops the update there, and the step's loss and
//               count are left out of the metrics by its flags (StepMetrics). When the verdict
//               reaches the host, before the next update, the dropped step is counted and its
//               optimizer step count taken back: the same model, counts and records as
//               every_step, bit for bit.
//   auto        next_step on a CUDA device without the f16 loss scaler (which reads its own
//               found-inf flag every step), every_step otherwise.
enum class NonfiniteCheck { every_step, next_step };
NonfiniteCheck resolve_nonfinite_check(const std::string& value, bool on_cuda, bool loss_scaler);

// This rank's per-step check.
class NonfiniteGuard {
 public:
  // check_grads = false under the f16 loss scaler (see above).
  NonfiniteGuard(const ParamArena& arena, bool check_grads);
  // True when the loss or (with check_grads) some gradient is inf or NaN: one fused pass, one
  // read back of two flags.
  bool step_nonfinite(const Tensor& loss);
  // nonfinite_check = next_step: the same pass, its flags started towards the host (no wait);
  // take_posted() returns them later (pending: one was posted and not taken). `group_first`:
  // the step starts an accumulation group (the group's loss flag starts again).
  void post_check(const Tensor& loss, bool group_first);
  // The last posted check's flags, on the arena's device, for the device to act on:
  // skip_flags() drop the group's update (Optimizer::step_unless: the summed gradients and the
  // group's losses), metric_flags() leave the step out of the metrics (its loss and gradients).
  Tensor skip_flags() const { return flags_.flat_range(1, 3); }
  Tensor metric_flags() const { return flags_.flat_range(0, 2); }
  bool posted() const { return readback_.pending(); }
  NonfiniteFlags take_posted();
  // After step_nonfinite() returned true, what was non-finite: "loss", "gradient of 'fc.bias'",
  // or both. Per-tensor passes (with one read back): only on the failure path.
  std::string describe(const Tensor& loss) const;
  // What a posted check found, at `global_step`, from its flags alone (see NonfiniteCheck).
  static std::string describe_posted(const NonfiniteFlags& f, int64_t global_step);
  bool check_grads() const { return check_grads_; }

 private:
  const ParamArena& arena_;
  bool check_grads_;
  Tensor flags_;  // f32 [3] on the arena's device: loss, gradients, the group's losses
  HostReadback readback_;
  // Zeroes the step's two flags and checks the loss and the gradients; returns the loss as
  // the flat f32 tensor it checked.
  Tensor run_passes(const Tensor& loss);
};

}  // namespace dplab
