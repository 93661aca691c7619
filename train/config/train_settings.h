// The training driver's own options, read and checked before anything is built, so a typo or a
// bad value fails at once (the option table: train/config/config.cpp). The parts' options
// (data, model, optimizer, schedule, algorithm) are read by their factories.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dplab/core/device.h"
#include "dplab/core/options.h"
#include "dplab/train/loop/train_loop.h"
#include "dplab/train/report/progress.h"

namespace dplab {

struct TrainSettings {
  LoopSettings loop;  // epochs, max_steps, checkpoint.*, label_smoothing, amp, nonfinite, out
  std::string model_name, data_spec;
  uint64_t seed = 0;
  int64_t batch = 1;       // per rank
  int64_t eval_batch = 0;  // 0: training_eval_batch (train/data/evaluate.h)
  bool f16 = false;        // amp = f16: loss scaling
  std::string resume, init_from;
  std::vector<std::string> resume_overrides;
  bool reshard = false;              // resume.reshard: another world size (train/state/reshard.h)
  std::vector<int> preempt_signals;  // none without an output directory to save to
  Progress::Mode progress = Progress::Mode::off;
  int every_percent = 10;
  int64_t metrics_every_steps = 0;
  int64_t accumulate_steps = 1;
};

TrainSettings read_train_settings(const Options& opt);

// Options device and comm (the algorithm from `registry`: does it use a communicator?): the
// training device, checked to exist (a run on a machine without it fails before any data is read),
// and made this thread's CUDA device. Under NCCL a bare "cuda" is this rank's GPU (local rank mod
// device count).
Device set_up_train_device(const Options& opt, const Registry& registry);
// The same for an algorithm that does (`communicates`) or does not build communicators.
Device set_up_train_device(const Options& opt, bool communicates);

}  // namespace dplab
