#include "dplab/train/state/model_file.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "dplab/core/error.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/shards.h"
#include "dplab/layers/module.h"

namespace dplab {
namespace {

// The first `n` names of `names`, then "... (K more)".
std::string first_names(const std::vector<std::string>& names, size_t n = 3) {
  std::string r;
  for (size_t i = 0; i < names.size() && i < n; ++i) r += (i ? ", " : "") + names[i];
  if (names.size() > n) r += fmt::format(", ... ({} more)", names.size() - n);
  return r;
}

}  // namespace

std::string describe_model_file(const ModelWeights& w) {
  std::vector<std::string> names;
  for (const auto& t : w.tensors) names.push_back(t.name);
  if (!w.model.empty())
    return fmt::format("{} holds model '{}' ({} tensors)", w.file, w.model, w.tensors.size());
  return fmt::format("{} records no model name (no dplab.model metadata) and holds {} tensors ({})",
                     w.file, w.tensors.size(), first_names(names));
}

std::string model_for_file(const std::string& given, const ModelWeights& w) {
  if (!given.empty()) return given;
  DPLAB_CHECK(!w.model.empty(), "{}: give the model with --model", describe_model_file(w));
  return w.model;
}

int classes_in_file(const ModelWeights& w) {
  const NamedTensor* head = nullptr;
  for (const auto& t : w.tensors)
    if (t.tensor.dim() == 2 && t.name.ends_with(".weight")) head = &t;
  if (!head) return -1;
  const int64_t rows = head->tensor.size(0);
  // The head's bias must agree: when it does not, one of the two has a wrong shape, and a model
  // built for either count would blame the other. Neither is taken (-1: the data's or the
  // model's own count), so the load names the tensor that differs from the model.
  const std::string bias = head->name.substr(0, head->name.size() - 6) + "bias";
  for (const auto& t : w.tensors)
    if (t.name == bias && (t.tensor.dim() != 1 || t.tensor.size(0) != rows)) return -1;
  return int(rows);
}

int channels_in_file(const ModelWeights& w) {
  for (const auto& t : w.tensors)
    if (t.tensor.dim() == 4 && t.name.ends_with(".weight")) return int(t.tensor.size(1));
  return -1;
}

std::vector<std::string> class_names_in_file(const ModelWeights& w) {
  const auto it = w.meta.find("dplab.classes");
  if (it == w.meta.end()) return {};
  try {
    const auto j = nlohmann::json::parse(it->second);
    return j.get<std::vector<std::string>>();
  } catch (const std::exception& e) {
    DPLAB_FAIL("{}: metadata dplab.classes: expected a JSON array of strings: {}", w.file,
               e.what());
  }
}

void load_model_file(const ModelWeights& w, Module& model, const std::string& model_name) {
  std::map<std::string, const Tensor*> in_file;
  for (const auto& t : w.tensors) in_file[t.name] = &t.tensor;
  std::vector<std::string> missing, unexpected, shape;
  std::set<std::string> expected;
  for (const auto& t : model.state_dict()) {
    expected.insert(t.name);
    const auto it = in_file.find(t.name);
    if (it == in_file.end())
      missing.push_back(t.name);
    else if (it->second->shape() != t.tensor.shape())
      shape.push_back(fmt::format("{} {} in the file, {} in {}", t.name,
                                  shape_str(it->second->shape()), shape_str(t.tensor.shape()),
                                  model_name));
  }
  for (const auto& t : w.tensors)
    if (!expected.count(t.name)) unexpected.push_back(t.name);
  if (!missing.empty() || !unexpected.empty() || !shape.empty()) {
    std::string why;
    if (!missing.empty())
      why += fmt::format("; {} tensors of {} missing ({})", missing.size(), model_name,
                         first_names(missing));
    if (!unexpected.empty())
      why +=
          fmt::format("; {} tensors unexpected ({})", unexpected.size(), first_names(unexpected));
    if (!shape.empty())
      why += fmt::format("; {} tensors of another shape ({})", shape.size(), first_names(shape, 2));
    DPLAB_FAIL("{} does not fit model '{}': {}{}{}", w.file, model_name, describe_model_file(w),
               why,
               !w.model.empty() && w.model != model_name
                   ? fmt::format(" (leave out --model to use '{}')", w.model)
                   : "");
  }
  try {
    model.load_state_dict(w.tensors, /*strict=*/true);
  } catch (const Error& e) {
    DPLAB_FAIL("{}: cannot load the model weights: {}", w.file, e.what());
  }
}

std::vector<std::string> dataset_class_names(const Dataset& d) {
  if (const auto* f = dynamic_cast<const ImageFolderDataset*>(&d)) return f->listing().classes;
  if (const auto* s = dynamic_cast<const ShardDataset*>(&d))
    return shard_index_classes(s->shards().front());
  return {};
}

}  // namespace dplab
