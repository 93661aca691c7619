#include "dplab/tools/train/checkpoint.h"

#include <fmt/format.h>

#include <filesystem>

#include "dplab/core/error.h"
#include "dplab/core/safetensors.h"
#include "dplab/layers/module.h"
#include "dplab/optim/optimizer.h"

namespace dplab {
namespace {

constexpr const char* kStateSuffix = ".state.safetensors";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Doubles as exact decimal text (17 significant digits round-trip).
std::string exact(double v) {
  return fmt::format("{:.17g}", v);
}

std::string join(const std::vector<double>& v) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? "," : "") + exact(v[i]);
  return r;
}

std::vector<double> split_doubles(const std::string& s) {
  std::vector<double> r;
  size_t start = 0;
  while (start < s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    r.push_back(std::stod(s.substr(start, comma - start)));
    start = comma + 1;
  }
  return r;
}

std::string model_path_of(const std::string& path) {
  if (ends_with(path, kStateSuffix))
    return path.substr(0, path.size() - std::string(kStateSuffix).size()) + ".safetensors";
  return path;
}

}  // namespace

std::string state_path_for(const std::string& model_path) {
  std::string base = model_path;
  if (ends_with(base, ".safetensors"))
    base.resize(base.size() - std::string(".safetensors").size());
  return base + kStateSuffix;
}

void save_checkpoint(const std::string& model_path, const Module& model, const Optimizer& optimizer,
                     const LoopState& loop) {
  std::filesystem::path p(model_path);
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path());
  std::map<std::string, std::string> model_meta = {
      {"format", "pt"},  // what PyTorch's safetensors loader expects
      {"dplab.epoch", std::to_string(loop.epoch)},
      {"dplab.global_step", std::to_string(loop.global_step)},
  };
  if (auto it = loop.config.find("model"); it != loop.config.end())
    model_meta["dplab.model"] = it->second;
  save_safetensors(model_path, model.state_dict(), model_meta);

  std::map<std::string, std::string> meta = {
      {"dplab.epoch", std::to_string(loop.epoch)},
      {"dplab.step_in_epoch", std::to_string(loop.step_in_epoch)},
      {"dplab.global_step", std::to_string(loop.global_step)},
      {"dplab.optimizer_steps", std::to_string(loop.optimizer_steps)},
      {"dplab.epoch_loss_sum", exact(loop.epoch_loss_sum)},
      {"dplab.epoch_correct", std::to_string(loop.epoch_correct)},
      {"dplab.epoch_seen", std::to_string(loop.epoch_seen)},
      {"dplab.epoch_losses", join(loop.epoch_losses)},
      {"dplab.optimizer", optimizer.name()},
  };
  for (const auto& [k, v] : loop.config) meta["config." + k] = v;
  save_safetensors(state_path_for(model_path), optimizer.state(), meta);
}

void load_model_weights(const std::string& path, Module& model) {
  const std::string mp = model_path_of(path);
  DPLAB_CHECK(std::filesystem::exists(mp), "checkpoint {} does not exist", mp);
  try {
    model.load_state_dict(load_safetensors(mp), /*strict=*/true);
  } catch (const Error& e) {
    DPLAB_FAIL("{}: cannot load model weights: {}", mp, e.what());
  }
}

LoopState load_checkpoint(const std::string& path, Module& model, Optimizer& optimizer) {
  load_model_weights(path, model);
  const std::string sp = state_path_for(model_path_of(path));
  DPLAB_CHECK(std::filesystem::exists(sp),
              "{}: no training state next to the checkpoint (expected {}); a model-only file "
              "can be evaluated but not resumed",
              path, sp);
  std::map<std::string, std::string> meta;
  std::vector<NamedTensor> tensors = load_safetensors(sp, &meta);
  auto get = [&](const std::string& key) -> const std::string& {
    auto it = meta.find(key);
    DPLAB_CHECK(it != meta.end(), "{}: metadata key '{}' missing", sp, key);
    return it->second;
  };
  DPLAB_CHECK(get("dplab.optimizer") == optimizer.name(),
              "{}: saved by optimizer '{}', resuming with '{}'", sp, get("dplab.optimizer"),
              optimizer.name());
  try {
    optimizer.load_state(tensors);
  } catch (const Error& e) {
    DPLAB_FAIL("{}: cannot load optimizer state: {}", sp, e.what());
  }
  LoopState s;
  try {
    s.epoch = std::stoll(get("dplab.epoch"));
    s.step_in_epoch = std::stoll(get("dplab.step_in_epoch"));
    s.global_step = std::stoll(get("dplab.global_step"));
    s.optimizer_steps = std::stoll(get("dplab.optimizer_steps"));
    s.epoch_loss_sum = std::stod(get("dplab.epoch_loss_sum"));
    s.epoch_correct = std::stoll(get("dplab.epoch_correct"));
    s.epoch_seen = std::stoll(get("dplab.epoch_seen"));
    s.epoch_losses = split_doubles(get("dplab.epoch_losses"));
  } catch (const std::logic_error& e) {
    DPLAB_FAIL("{}: malformed loop-state metadata ({})", sp, e.what());
  }
  for (const auto& [k, v] : meta)
    if (k.rfind("config.", 0) == 0) s.config[k.substr(7)] = v;
  return s;
}

}  // namespace dplab
