#include "dplab/train/state/reshard_average.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "dplab/core/error.h"
#include "dplab/core/safetensors.h"

namespace dplab {

namespace {

constexpr const char* kAlgo = "algo.";

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

const char* rule_name(Combine how) {
  switch (how) {
    case Combine::same:
      return "global (the same on every rank)";
    case Combine::rank0:
      return "rank 0's";
    case Combine::mean:
      return "averaged";
    case Combine::fresh:
      return "re-derived for the new world";
  }
  return "?";
}

// Tensor `name` of every file combined by `how` (not fresh); `weights` (one per file, or empty)
// weight a mean.
Tensor combine_tensor(const std::vector<StateDict>& files, const std::string& name, Combine how,
                      const std::vector<double>& weights, bool differing_counts_rank0) {
  const StateDict& first = files[0];
  const Tensor& t0 = first.tensor(name);
  if (how == Combine::rank0) return t0;
  for (size_t i = 1; i < files.size(); ++i) {
    const Tensor& t = files[i].tensor(name);
    DPLAB_CHECK(t.dtype() == t0.dtype() && t.shape() == t0.shape(),
                "{}: state tensor '{}' is {}, {}'s is {}", files[i].origin(), name, t.str(),
                first.origin(), t0.str());
  }
  if (how == Combine::same || t0.dtype() != DType::f32) {
    for (size_t i = 1; i < files.size(); ++i) {
      if (same_bytes(files[i].tensor(name), t0)) continue;
      if (how == Combine::mean && differing_counts_rank0) break;  // documented: rank 0's
      DPLAB_FAIL("{}: state tensor '{}' differs from {}'s, but {}", files[i].origin(), name,
                 first.origin(),
                 how == Combine::same ? "it is global state, the same on every rank"
                                      : "only f32 state is averaged (the others must agree)");
    }
    return t0;
  }
  // The mean in double, in rank order: sum_i w_i x_i / sum_i w_i (w_i = 1 unweighted).
  std::vector<double> sum(size_t(t0.numel()), 0.0);
  double total = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    const double w = weights.empty() ? 1.0 : weights[i];
    const float* x = files[i].tensor(name).data<float>();
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += w * double(x[k]);
    total += w;
  }
  Tensor out = t0.clone();
  float* y = out.data<float>();
  for (size_t k = 0; k < sum.size(); ++k) y[k] = float(sum[k] / total);
  return out;
}

Combine class_rule(const ConsensusRules& rules, const std::string& name) {
  if (name.starts_with("model.")) return rules.model;
  if (name.starts_with("optim.")) return rules.optimizer;
  if (name.starts_with(kAlgo)) return algo_rule(rules, name.substr(std::strlen(kAlgo)));
  return Combine::rank0;  // amp.*: rank 0's loss scaler
}

}  // namespace

Combine algo_rule(const ConsensusRules& rules, const std::string& key) {
  for (const StateRule& r : rules.algo) {
    if (r.key.ends_with('*') ? key.starts_with(r.key.substr(0, r.key.size() - 1)) : key == r.key)
      return r.how;
  }
  return Combine::same;
}

std::vector<StateDict> read_rank_files(const Manifest& m) {
  std::vector<StateDict> files;
  for (const ManifestFile& f : m.files) {
    const std::string file = (m.dir / f.name).string();
    std::map<std::string, std::string> meta;
    std::vector<NamedTensor> tensors = load_safetensors(file, &meta);  // fills meta first
    StateDict s(file);
    s.assign(std::move(tensors), std::move(meta));
    files.push_back(std::move(s));
  }
  DPLAB_CHECK(!files.empty(), "{}: no rank files", m.dir.string());
  return files;
}

StateDict consensus_state(const Manifest& m, const std::vector<StateDict>& files,
                          const ConsensusRules& rules, const StateDict& fresh_algo) {
  const StateDict& first = files[0];
  StateDict out(
      fmt::format("{} (the consensus of its {} rank files)", m.dir.string(), files.size()));
  std::vector<double> weights;
  const std::string wkey = std::string(kAlgo) + rules.model_weight;
  if (!rules.model_weight.empty() && first.has(wkey)) {
    for (const StateDict& f : files) {
      const double w = f.get_double(wkey);
      DPLAB_CHECK(std::isfinite(w) && w > 0, "{}: state value '{}' = {}: expected a weight > 0",
                  f.origin(), wkey, w);
      weights.push_back(w);
    }
  }
  // Every file holds the same entries as rank 0's, except those re-derived for the new world
  // (DASO's pending sums live in the files of a sync's members only).
  auto counted = [&](const StateDict& f) {
    size_t n = 0;
    for (const auto& t : f.tensors())
      if (class_rule(rules, t.name) != Combine::fresh) ++n;
    return n;
  };
  for (size_t i = 1; i < files.size(); ++i)
    DPLAB_CHECK(counted(files[i]) == counted(first),
                "{}: {} state tensors to combine, {} has {} (files of one checkpoint?)",
                files[i].origin(), counted(files[i]), first.origin(), counted(first));
  for (const auto& t : first.tensors()) {
    const Combine how = class_rule(rules, t.name);
    if (how == Combine::fresh) continue;
    const bool model = t.name.starts_with("model.");
    out.put_tensor(t.name,
                   combine_tensor(files, t.name, how, model ? weights : std::vector<double>{},
                                  t.name.starts_with("optim.") && rules.differing_step_counts));
  }
  std::map<std::string, std::string> values;
  for (const auto& [key, v] : first.values()) {
    if (!key.starts_with(kAlgo)) {
      values[key] = v;  // loop position, schedule, format: rank 0's
      continue;
    }
    const std::string k = key.substr(std::strlen(kAlgo));
    const Combine how = algo_rule(rules, k);
    if (how == Combine::fresh) continue;
    if (auto s = rules.set.find(k); s != rules.set.end()) {
      values[key] = s->second;
      continue;
    }
    if (how != Combine::rank0)
      for (size_t i = 1; i < files.size(); ++i) {
        const auto it = files[i].values().find(key);
        DPLAB_CHECK(it != files[i].values().end() && it->second == v,
                    "{}: state value '{}' = '{}', {}'s is '{}': --reshard needs the same value "
                    "on every rank (the entry is {})",
                    files[i].origin(), key,
                    it == files[i].values().end() ? std::string("(missing)") : it->second,
                    first.origin(), v, rule_name(how));
      }
    values[key] = v;
  }
  for (const auto& t : fresh_algo.tensors())
    if (algo_rule(rules, t.name) == Combine::fresh) out.put_tensor(kAlgo + t.name, t.tensor);
  for (const auto& [k, v] : fresh_algo.values())
    if (algo_rule(rules, k) == Combine::fresh) values[kAlgo + k] = v;
  std::vector<NamedTensor> tensors = out.tensors();
  out.assign(std::move(tensors), std::move(values));
  return out;
}

}  // namespace dplab
