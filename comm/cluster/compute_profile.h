// A compute profile (`cluster.compute = profile:FILE`, docs/virtual_cluster.md): one training
// step's compute on some device, as `dplab bench train --profile-out FILE` records it, so that
// a CPU box can replay a GPU's compute timeline under the real algorithm's communication.
// Per model and batch: the median forward, backward and optimizer times, and for each
// parameter tensor (arena order) the median fraction of backward elapsed when its gradient is
// ready; a gradient bucket is ready when its last tensor is (bucket_ready_fraction). Beside
// them, the training driver's per-step non-finite check of the loss and the gradients
// (train/loop/nonfinite_guard.h: one pass over the gradient arena), `check_s`: host work every
// real step pays between backward and the optimizer, which the phases above leave out (issue
// #37 item 2). A file without it (written before it was recorded) reads as 0. And the spread
// of the profiled steps, `step_log_sigma`: the standard deviation over the steps of the log of
// a step's compute (forward + backward + check + optimizer). Replay uses the medians only; a
// study that wants the host's step-to-step jitter in its times adds a lognormal `slow` event
// of this sigma (events.h), which keeps the median and gives each rank and step its own draw, so
// that a synchronous step pays for its slowest rank. Absent in older files: 0.
//
// The file is JSON:
//   {"dplab_compute_profile": 1, "model": "resnet50", "batch": 64, "device": "cuda:0",
//    "threads": 1, "steps": 20, "forward_s": 0.031, "backward_s": 0.062, "optimizer_s": 0.004,
//    "check_s": 0.0002, "step_log_sigma": 0.04,
//    "segments": [{"name": "conv1.weight", "numel": 9408, "ready_fraction": 0.99}, ...]}
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dplab::cluster {

struct ComputeProfile {
  std::string model;
  int64_t batch = 0;
  std::string device;
  int64_t threads = 0, steps = 0;
  double forward_s = 0, backward_s = 0, optimizer_s = 0;
  double check_s = 0;         // the driver's non-finite check per step (0: not recorded)
  double step_log_sigma = 0;  // spread of the steps' compute, std of the log (0: not recorded)
  struct Segment {
    std::string name;
    int64_t numel = 0;
    double ready_fraction = 0;  // of backward_s, in [0, 1]
  };
  std::vector<Segment> segments;

  // Fraction of backward elapsed when segments [first, last] (arena order) are all ready.
  double bucket_ready_fraction(int first, int last) const;
};

// The sample standard deviation (n - 1) of log(step_s[i]) over the steps' compute times: the
// sigma of the lognormal `slow` event that replays their spread around the median (0 for
// fewer than 2 steps; a time <= 0 throws).
double step_log_sigma(const std::vector<double>& step_s);

std::string compute_profile_json(const ComputeProfile& p);
// `path` names the source in errors (file, key, what was expected).
ComputeProfile parse_compute_profile(const std::string& text, const std::string& path);
ComputeProfile load_compute_profile(const std::string& path);

}  // namespace dplab::cluster
