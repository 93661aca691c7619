#include "dplab/train/config/train_settings.h"

#include "dplab/comm/world.h"
#include "dplab/core/device.h"
#include "dplab/core/usage_error.h"
#include "dplab/train/config/config.h"

namespace dplab {
namespace {

std::string get(const Options& opt, const std::string& key) {
  return train_option_table().get_string(opt, key);
}
int64_t get_int(const Options& opt, const std::string& key) {
  return train_option_table().get_int(opt, key);
}
double get_double(const Options& opt, const std::string& key) {
  return train_option_table().get_double(opt, key);
}

}  // namespace

TrainSettings read_train_settings(const Options& opt) {
  TrainSettings t;
  LoopSettings& l = t.loop;
  t.model_name = l.model_name = get(opt, "model");
  t.seed = uint64_t(get_int(opt, "seed"));
  l.epochs = get_int(opt, "epochs");
  t.batch = get_int(opt, "batch");
  l.max_steps = get_int(opt, "max_steps");
  t.eval_batch = get_int(opt, "eval.batch");
  l.checkpoint_every_epochs = get_int(opt, "checkpoint.every_epochs");
  l.checkpoint_every_steps = get_int(opt, "checkpoint.every_steps");
  l.checkpoint_keep = get_int(opt, "checkpoint.keep");
  l.label_smoothing = float(get_double(opt, "label_smoothing"));
  // amp = off | bf16 | f16 (mixed precision; core/autocast.h, optim/grad_scaler.h).
  const std::string amp = get(opt, "amp");
  l.amp_dtype = amp == "bf16" ? DType::bf16 : amp == "f16" ? DType::f16 : DType::f32;
  t.f16 = amp == "f16";
  l.out_dir = get(opt, "out");
  t.resume = get(opt, "resume");
  t.resume_overrides = split_override_list(get(opt, "resume.override"));
  t.reshard = train_option_table().get_bool(opt, "resume.reshard");
  DPLAB_CHECK_OPTION(!t.reshard || !t.resume.empty(),
                     "option resume.reshard (--reshard) needs resume (--resume DIR): it "
                     "continues a checkpoint on another number of ranks");
  t.init_from = get(opt, "init_from");
  DPLAB_CHECK_OPTION(
      t.resume.empty() || t.init_from.empty(),
      "options resume and init_from exclude each other (resume continues a run, init_from "
      "starts a new one from a checkpoint's weights)");
  // nonfinite = stop | skip (train/loop/nonfinite_guard.h); preempt.signals only with an
  // output directory to save to (train/loop/preemption.h).
  l.nonfinite = parse_nonfinite_policy(get(opt, "nonfinite"));
  l.nonfinite_check = get(opt, "nonfinite_check");  // resolved by TrainLoop (device, scaler)
  t.preempt_signals = parse_preempt_signals(get(opt, "preempt.signals"));
  if (l.out_dir.empty()) t.preempt_signals.clear();
  t.progress = Progress::parse_mode(get(opt, "progress"));
  t.every_percent = int(get_int(opt, "progress.every_percent"));
  // Step records every N global steps (train/report/step_record.h; 0: none).
  t.metrics_every_steps = get_int(opt, "metrics.every_steps");
  t.accumulate_steps = get_int(opt, "accumulate_steps");
  t.data_spec = get(opt, "data");
  return t;
}

Device set_up_train_device(const Options& opt, const Registry& registry) {
  return set_up_train_device(opt, uses_communicator(registry.strategy(get(opt, "algo"))));
}

Device set_up_train_device(const Options& opt, bool communicates) {
  // comm = mpi | nccl | auto (comm/world.h), validated for every algorithm. NCCL needs a GPU per
  // rank: a bare "cuda" then means this rank's (local rank mod device count).
  const bool nccl = comm_backend(opt) == "nccl" && communicates;
  const Device device = nccl && get(opt, "device") == "cuda" ? Device::cuda(nccl_rank_device())
                                                             : Device::parse(get(opt, "device"));
  if (device.is_cuda()) {
    DPLAB_CHECK(cuda_available(), "option device = {}: {}", device.str(),
                cuda_unavailable_reason());
    DPLAB_CHECK(device.index < cuda_device_count(), "option device = {}: only {} CUDA device(s)",
                device.str(), cuda_device_count());
    use_device(device);  // this thread's device from now on (no context on GPU 0 for rank N)
  }
  return device;
}

}  // namespace dplab
