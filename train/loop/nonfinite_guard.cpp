#include "dplab/train/loop/nonfinite_guard.h"

#include <fmt/format.h>

#include <algorithm>

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"
#include "dplab/core/kernels/loss.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

// x as a contiguous f32 tensor on its device (itself when it already is one).
Tensor as_flat_f32(const Tensor& x) {
  Tensor t = x.dtype() == DType::f32 ? x : x.to(DType::f32);
  return t.is_contiguous() ? t : t.contiguous();
}

}  // namespace

NonfinitePolicy parse_nonfinite_policy(const std::string& value) {
  if (value == "stop") return NonfinitePolicy::stop;
  if (value == "skip") return NonfinitePolicy::skip;
  DPLAB_FAIL_OPTION("option nonfinite: expected stop or skip, got '{}'", value);
}

std::vector<size_t> nonfinite_indices(const std::vector<Tensor>& tensors) {
  NoGradGuard no_grad;
  std::vector<size_t> bad;
  std::vector<bool> done(tensors.size(), false);
  // One flags tensor (and one read back) per device the tensors live on.
  for (size_t first = 0; first < tensors.size(); ++first) {
    if (done[first]) continue;
    const Device dev = tensors[first].device();
    std::vector<size_t> group;
    for (size_t i = first; i < tensors.size(); ++i)
      if (!done[i] && tensors[i].device() == dev) {
        done[i] = true;
        if (tensors[i].defined() && is_floating(tensors[i].dtype()) && tensors[i].numel() > 0)
          group.push_back(i);
      }
    if (group.empty()) continue;
    Tensor flags = Tensor::zeros({int64_t(group.size())}, DType::f32, dev);
    const auto& kernels = backend_for(dev).optim;
    for (size_t j = 0; j < group.size(); ++j)
      kernels.find_nonfinite(as_flat_f32(tensors[group[j]]), flags, int64_t(j));
    const std::vector<float> f = flags.to_vector();  // the one read back for this device
    for (size_t j = 0; j < group.size(); ++j)
      if (f[j] != 0.f) bad.push_back(group[j]);
  }
  std::sort(bad.begin(), bad.end());
  return bad;
}

std::vector<std::string> nonfinite_names(const std::vector<NamedTensor>& tensors) {
  std::vector<Tensor> ts;
  ts.reserve(tensors.size());
  for (const auto& nt : tensors) ts.push_back(nt.tensor);
  std::vector<std::string> names;
  for (size_t i : nonfinite_indices(ts)) names.push_back(tensors[i].name);
  return names;
}

std::vector<std::string> nonfinite_entries(const StateDict& state) {
  std::vector<std::string> names = nonfinite_names(state.tensors());
  // Values are exact text: a double that is inf or NaN is spelled "inf", "-inf" or "nan"
  // (StateDict::put_double), alone or as an element of a comma-separated list (put_doubles).
  for (const auto& [name, text] : state.values()) {
    size_t start = 0;
    while (start <= text.size()) {
      size_t comma = text.find(',', start);
      if (comma == std::string::npos) comma = text.size();
      const std::string item = text.substr(start, comma - start);
      if (item == "nan" || item == "inf" || item == "-inf") {
        names.push_back(name);
        break;
      }
      start = comma + 1;
    }
  }
  return names;
}

std::string name_list(const std::vector<std::string>& names, size_t show) {
  std::string r;
  const size_t shown = std::min(names.size(), show);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) r += (i + 1 == shown && shown == names.size()) ? " and " : ", ";
    r += "'" + names[i] + "'";
  }
  if (names.size() > shown) r += fmt::format(" and {} more", names.size() - shown);
  return r;
}

void check_targets_of_nonfinite_step(const Tensor& labels, const Tensor& logits) {
  DPLAB_CHECK(logits.dim() == 2, "cross_entropy: logits {} must be [N, C]", logits.str());
  check_class_targets(labels.to(Device::cpu()).contiguous(), logits.shape()[1], "cross_entropy");
}

NonfiniteGuard::NonfiniteGuard(const ParamArena& arena, bool check_grads)
    : arena_(arena), check_grads_(check_grads) {
  flags_ = Tensor::zeros({3}, DType::f32, arena.device());
}

Tensor NonfiniteGuard::run_passes(const Tensor& loss) {
  NoGradGuard no_grad;
  flags_.flat_range(0, 2).zero_();
  const auto& kernels = backend_for(arena_.device()).optim;
  Tensor flat_loss = as_flat_f32(loss.detach()).to(arena_.device());
  kernels.find_nonfinite(flat_loss, flags_, 0);
  if (check_grads_ && arena_.numel() > 0) kernels.find_nonfinite(arena_.grads(), flags_, 1);
  return flat_loss;
}

bool NonfiniteGuard::step_nonfinite(const Tensor& loss) {
  run_passes(loss);
  const std::vector<float> f = flags_.flat_range(0, 2).to_vector();  // the step's one read back
  return f[0] != 0.f || f[1] != 0.f;
}

void NonfiniteGuard::post_check(const Tensor& loss, bool group_first) {
  const Tensor flat_loss = run_passes(loss);
  NoGradGuard no_grad;
  if (group_first) flags_.flat_range(2, 3).zero_();
  backend_for(arena_.device()).optim.find_nonfinite(flat_loss, flags_, 2);  // one value
  readback_.start(flags_);  // no wait: take_posted() reads it a step later
}

NonfiniteFlags NonfiniteGuard::take_posted() {
  const std::vector<float> f = readback_.take();
  return {f[0] != 0.f, f[1] != 0.f, f[2] != 0.f};
}

std::string NonfiniteGuard::describe_posted(const NonfiniteFlags& f, int64_t global_step) {
  const std::string what = f.loss && f.grads ? "loss and at least one gradient"
                           : f.loss          ? "loss"
                                             : "at least one gradient";
  return fmt::format(
      "{} of global step {} (nonfinite_check = next_step read it a step later, when its "
      "gradients were gone; nonfinite_check = every_step names the tensor)",
      what, global_step);
}

NonfiniteCheck resolve_nonfinite_check(const std::string& value, bool on_cuda, bool loss_scaler) {
  if (value == "every_step") return NonfiniteCheck::every_step;
  if (value == "next_step") {
    DPLAB_CHECK_OPTION(!loss_scaler,
                       "option nonfinite_check = next_step: amp = f16's loss scaler decides "
                       "each step on its own found-inf flag at once; use every_step or auto");
    return NonfiniteCheck::next_step;
  }
  DPLAB_CHECK_OPTION(value == "auto",
                     "option nonfinite_check: expected auto, every_step or next_step, got '{}'",
                     value);
  return on_cuda && !loss_scaler ? NonfiniteCheck::next_step : NonfiniteCheck::every_step;
}

std::string NonfiniteGuard::describe(const Tensor& loss) const {
  std::vector<std::string> parts;
  if (!nonfinite_indices({loss.detach()}).empty()) parts.push_back("loss");
  if (check_grads_) {
    std::vector<NamedTensor> grads;
    for (const ArenaSegment& s : arena_.segments())
      grads.push_back({s.name, arena_.grads().flat_range(s.offset, s.offset + s.numel)});
    const std::vector<std::string> bad = nonfinite_names(grads);
    if (!bad.empty())
      parts.push_back(fmt::format("gradient{} of {}", bad.size() > 1 ? "s" : "", name_list(bad)));
  }
  if (parts.empty()) return "nothing non-finite on this rank";
  return parts.size() == 1 ? parts[0] : parts[0] + " and " + parts[1];
}

}  // namespace dplab
