#include "dplab/train/config/option_values.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>

#include "dplab/core/error.h"
#include "dplab/core/suggest.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

using Kind = ValueRule::Kind;
constexpr double kInf = std::numeric_limits<double>::infinity();

ValueRule integer(double min, double max = std::numeric_limits<double>::infinity()) {
  ValueRule r;
  r.kind = Kind::integer;
  r.min = min;
  r.max = max;
  return r;
}
ValueRule number(double min, double max = std::numeric_limits<double>::infinity(),
                 bool max_open = false) {
  ValueRule r;
  r.kind = Kind::number;
  r.min = min;
  r.max = max;
  r.max_open = max_open;
  return r;
}
ValueRule boolean() {
  ValueRule r;
  r.kind = Kind::boolean;
  return r;
}
ValueRule choice(std::function<std::vector<std::string>()> f) {
  ValueRule r;
  r.kind = Kind::choice;
  r.choices = std::move(f);
  return r;
}
ValueRule choice(std::vector<std::string> v) {
  return choice([v] { return v; });
}

// The names a key takes from `dplab train`'s registry (builtin_names_for). An experiment's
// registry is checked by check_option_values(opt, registry).
ValueRule builtin_names(const std::string& key) {
  return choice([key] { return builtin_names_for(key); });
}

// Only limits a run would refuse anyway (or cannot mean): a rule never forbids a setting the
// code accepts.
// GradSync's bucket sizes, wire type and compression keys under every GradSync prefix
// (option_keys.cpp's add_grad_sync; comm/grad_sync.h, comm/grad_compress.h).
std::map<std::string, ValueRule> with_grad_sync(std::map<std::string, ValueRule> m) {
  for (const std::string p : {"allreduce.", "hybrid.", "daso.local.", "crossover.sync."}) {
    m[p + "first_bucket_mb"] = number(0);
    m[p + "bucket_cap_mb"] = number(0);
    m[p + "wire"] = choice({"f32", "bf16", "f16"});
    m[p + "compress"] = choice({"none", "powersgd", "topk"});
    m[p + "powersgd.rank"] = integer(1);
    m[p + "powersgd.start_step"] = integer(0);
    m[p + "powersgd.min_compression_rate"] = number(0);
    m[p + "powersgd.warm_start"] = boolean();
    m[p + "topk.ratio"] = number(0, 1);  // > 0: checked by CompressOptions::from_options
  }
  return m;
}

const std::map<std::string, ValueRule>& rules() {
  static const std::map<std::string, ValueRule> r = with_grad_sync({
      {"model", builtin_names("model")},
      {"model.zero_init_residual", boolean()},
      {"data.image_size", integer(1)},
      {"data.on_error", choice({"skip", "fail"})},
      {"data.num_classes", integer(0, 16777216)},
      {"data.max_image_pixels", integer(1)},
      {"data.shuffle_buffer", integer(0)},
      {"data.train_limit", integer(0)},
      {"data.test_limit", integer(0)},
      {"data.workers", integer(0)},
      {"data.prefetch", integer(0)},
      {"epochs", integer(1)},
      {"batch", integer(1)},
      {"resume.reshard", boolean()},
      {"lr", number(0)},
      {"momentum", number(0)},
      {"nesterov", boolean()},
      {"dampening", number(0)},
      {"wd", number(0)},
      {"lars.eta", number(0)},
      {"lars.eps", number(0)},
      {"adamw.beta1", number(0, 1, true)},
      {"adamw.beta2", number(0, 1, true)},
      {"adamw.eps", number(0)},
      {"accumulate_steps", integer(1)},
      {"label_smoothing", number(0, 1)},
      {"amp", choice({"off", "bf16", "f16"})},
      {"seed", integer(0)},
      {"threads", integer(0)},
      {"max_steps", integer(0)},
      {"algo", builtin_names("algo")},
      {"optim", builtin_names("optim")},
      {"comm", choice({"mpi", "nccl", "auto"})},
      {"comm.wait", choice({"spin", "backoff", "auto"})},
      {"ranks_per_node", integer(0)},
      {"cluster.compute_scale", number(0)},
      {"cluster.data_rate", number(0)},
      {"cluster.nic_sharing", boolean()},
      {"cluster.failure_data", choice({"reassign", "drop"})},
      {"eval.batch", integer(0)},
      {"checkpoint.every_epochs", integer(0)},
      {"checkpoint.every_steps", integer(0)},
      {"checkpoint.keep", integer(0)},
      {"nonfinite", choice({"stop", "skip"})},
      {"trace", boolean()},
      {"progress", choice({"auto", "bar", "lines", "off"})},
      {"progress.every_percent", integer(1, 100)},
      {"metrics.every_steps", integer(0)},
      {"lr.schedule", builtin_names("lr.schedule")},
      {"lr.warmup_epochs", number(0)},
      {"lr.mode", choice({"min", "max"})},
      {"lr.patience", integer(0)},
      {"lr.step_size", integer(1)},
      {"lr.warmup_start_factor", number(0, 1)},
      {"lr.gamma", number(-kInf)},
      {"lr.power", number(0)},
      {"lr.min_factor", number(0, 1)},
      {"lr.factor", number(0, 1)},
      {"lr.threshold", number(0)},
      {"local_sgd.H", integer(1)},
      {"comm.timeout_s", number(0)},
      {"comm.backoff_sleep_us", number(0)},
      // The algorithms' keys (train/config/option_keys.cpp), as their from_options check them.
      {"allreduce.hierarchical", boolean()},
      {"allreduce.ft", choice({"none", "quorum"})},
      {"hybrid.mode", choice({"hybrid", "each_iter", "only_end"})},
      {"hybrid.W", integer(1)},
      {"hybrid.R", integer(1)},
      {"hybrid.split", choice({"ceil", "thirds"})},
      {"hybrid.counter", choice({"global", "epoch"})},
      {"hybrid.carry_grad", boolean()},
      {"hybrid.final_average", boolean()},
      {"hybrid.accumulate", choice({"sum", "mean"})},
      {"hybrid.hierarchical", boolean()},
      {"diloco.H", integer(1)},
      {"diloco.round_spans_epochs", boolean()},
      {"local_sgd.round_spans_epochs", boolean()},
      {"slowmo.round_spans_epochs", boolean()},
      {"streaming_diloco.round_spans_epochs", boolean()},
      {"diloco.outer_lr", number(0)},
      {"diloco.outer_momentum", number(0, 1, true)},
      {"diloco.outer_optim", choice({"nesterov", "sgd", "adam"})},
      {"diloco.outer_beta1", number(0, 1, true)},
      {"diloco.outer_beta2", number(0, 1, true)},
      {"diloco.outer_eps", number(0)},
      {"streaming_diloco.H", integer(1)},
      {"streaming_diloco.fragments", integer(1)},
      {"streaming_diloco.fragment_sync_delay", integer(0)},
      {"streaming_diloco.fragment_update_alpha", number(0, 1)},
      {"streaming_diloco.wire", choice({"f32", "bf16", "f16"})},
      {"streaming_diloco.quantize", choice({"none", "int8", "int4", "fp8_e4m3", "fp4_e2m1"})},
      {"streaming_diloco.fragment_pattern", choice({"contiguous", "strided"})},
      {"streaming_diloco.quantize_block", integer(1)},
      {"streaming_diloco.outer_lr", number(0)},
      {"streaming_diloco.outer_momentum", number(0, 1, true)},
      {"streaming_diloco.outer_nesterov", boolean()},
      {"slowmo.frequency", integer(1)},
      {"slowmo.lr", number(0)},
      {"slowmo.momentum", number(0, 1, true)},
      {"slowmo.base", choice({"local", "sgp"})},
      {"slowmo.localsgd_frequency", integer(0)},
      {"slowmo.node_workers", boolean()},
      {"daso.B_max", integer(1)},
      {"daso.S", integer(0)},
      {"daso.warmup_epochs", integer(0)},
      {"daso.cooldown_epochs", integer(0)},
      {"daso.plateau_threshold", number(0)},
      {"daso.plateau_patience", integer(0)},
      {"daso.S_reduction", choice({"halve", "decrement"})},
      {"daso.phases", boolean()},
      {"daso.epoch_end_sync", boolean()},
      {"daso.blocking_wire", choice({"f32", "bf16", "f16"})},
      {"daso.global_wire", choice({"f32", "bf16", "f16"})},
      {"dcs3gd.lambda0", number(0)},
      {"dcs3gd.norm", choice({"per_tensor", "global"})},
      {"dcs3gd.correct_from", choice({"start", "warmup_end"})},
      {"dcs3gd.schedule", choice({"warmup_linear", "loop"})},
      {"dcs3gd.warmup_frac", number(0, 1)},
      {"dcs3gd.wd_mult", number(0)},
      {"dcs3gd.wd_exclude", choice({"bn", "bn_bias", "none"})},
      {"dcs3gd.momentum", number(-std::numeric_limits<double>::infinity(), 1, true)},
      {"dcs3gd.wire", choice({"f32", "bf16", "f16"})},
      {"dcs3gd.progress_us", number(0)},
      {"dcs3gd.warmup_epochs", number(-kInf)},  // < 0: dcs3gd.warmup_frac
      {"crossover.sampler", choice({"balanced", "uniform"})},
      {"crossover.interval", integer(1)},
      {"sgp.interval", integer(1)},
      {"crossover.hierarchical", boolean()},
      {"crossover.check_maps", boolean()},
      {"oscars.tau_max", integer(0)},
      {"oscars.M", integer(-kInf)},
      {"oscars.text_step_us", integer(-kInf)},
      {"oscars.profile_discard", integer(0)},
      {"oscars.profile_measure", integer(1)},
      {"oscars.reprofile_rounds", integer(0)},
      {"oscars.resolution_rel", number(0, 1, true)},
      {"crossover.seed", integer(-kInf)},
      {"oscars.search", choice({"exact", "alg1", "text"})},
      {"post_local_sgd.switch_epoch", integer(0)},
  });
  return r;
}

std::string bound_text(double v) {
  return fmt::format("{}", v);
}

// "an integer >= 1", "a number in [0, 1]".
std::string expectation(const ValueRule& r) {
  const std::string what = r.kind == Kind::integer ? "an integer" : "a number";
  const bool lo = std::isfinite(r.min), hi = std::isfinite(r.max);
  if (lo && hi)
    return fmt::format("{} in [{}, {}{}", what, bound_text(r.min), bound_text(r.max),
                       r.max_open ? ")" : "]");
  if (lo) return fmt::format("{} >= {}", what, bound_text(r.min));
  if (hi) return fmt::format("{} {} {}", what, r.max_open ? "<" : "<=", bound_text(r.max));
  return what;
}

std::string joined_choices(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i)
    s += (i == 0 ? "" : i + 1 == v.size() ? " or " : ", ") + v[i];
  return s;
}

}  // namespace

std::string option_expectation(const std::string& key) {
  const ValueRule* r = option_value_rule(key);
  if (!r) return "a string, number, boolean or an array of them";
  switch (r->kind) {
    case Kind::text:
      return "a string";
    case Kind::boolean:
      return "true or false";
    case Kind::choice:
      return joined_choices(r->choices());
    case Kind::integer:
    case Kind::number:
      return expectation(*r);
  }
  return "";
}

const ValueRule* option_value_rule(const std::string& key) {
  auto it = rules().find(key);
  return it == rules().end() ? nullptr : &it->second;
}

std::string option_type_name(const std::string& key) {
  const ValueRule* r = option_value_rule(key);
  if (!r) return "TEXT";
  switch (r->kind) {
    case Kind::integer:
      return "INT";
    case Kind::number:
      return "FLOAT";
    case Kind::boolean:
      return "BOOL";
    case Kind::choice: {
      std::string s;
      for (const auto& c : r->choices()) s += (s.empty() ? "" : "|") + c;
      return s.size() <= 40 ? s : "NAME";
    }
    case Kind::text:
      return "TEXT";
  }
  return "TEXT";
}

std::string check_option_choice(const std::string& key, const std::string& value,
                                const std::vector<std::string>& names) {
  for (const auto& ok : names)
    if (value == ok) return "";
  return fmt::format("option {}: unknown value {}{}; expected {}", key, quoted_excerpt(value),
                     did_you_mean(value, names), joined_choices(names));
}

std::string check_option_value(const std::string& key, const std::string& value) {
  const ValueRule* r = option_value_rule(key);
  if (!r) return "";
  switch (r->kind) {
    case Kind::text:
      return "";
    case Kind::boolean:
      for (const char* ok : {"true", "1", "yes", "on", "false", "0", "no", "off"})
        if (value == ok) return "";
      return fmt::format("option {}: expected true or false, got {}", key, quoted_excerpt(value));
    case Kind::choice:
      return check_option_choice(key, value, r->choices());
    case Kind::integer:
    case Kind::number: {
      double v = 0;
      bool parsed = false;
      if (r->kind == Kind::integer) {
        int64_t i = 0;
        auto res = std::from_chars(value.data(), value.data() + value.size(), i);
        parsed = res.ec == std::errc() && res.ptr == value.data() + value.size();
        v = double(i);
      } else {
        try {
          size_t pos = 0;
          v = std::stod(value, &pos);
          parsed = pos == value.size() && std::isfinite(v);
        } catch (const std::logic_error&) {
        }
      }
      const bool in_range = parsed && v >= r->min && (r->max_open ? v < r->max : v <= r->max);
      if (in_range) return "";
      return fmt::format("option {}: expected {}, got {}", key, expectation(*r),
                         quoted_excerpt(value));
    }
  }
  return "";
}

void check_option_values(const Options& opt) {
  for (const auto& [key, value] : opt.values()) {
    const std::string why = check_option_value(key, value);
    if (!why.empty()) throw UsageError(why);
  }
}

std::string config_value_place(const std::string& key, const std::string& path,
                               const std::map<std::string, std::string>* places) {
  if (places)
    if (const auto it = places->find(key); it != places->end()) return it->second;
  return path;
}

void check_config_values(const Options& from_file, const Options& opt, const std::string& path,
                         const std::map<std::string, std::string>* places) {
  for (const auto& [key, value] : from_file.values()) {
    const auto it = opt.values().find(key);
    if (it == opt.values().end() || it->second != value) continue;  // a flag or --set replaced it
    const std::string why = check_option_value(key, value);
    if (!why.empty())
      throw UsageError(fmt::format("{}: {}", config_value_place(key, path, places), why));
  }
}

}  // namespace dplab
