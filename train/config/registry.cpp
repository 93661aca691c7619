#include "dplab/train/config/registry.h"
#include "dplab/core/suggest.h"
#include "dplab/core/usage_error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"

namespace dplab {
namespace {

template <class Entry>
std::vector<std::string> names_of(const std::vector<Entry>& entries) {
  std::vector<std::string> r;
  for (const Entry& e : entries) r.push_back(e.name);
  return r;
}

template <class Entry>
void add_entry(std::vector<Entry>& entries, Entry e, const char* kind) {
  DPLAB_CHECK(!e.name.empty(), "Registry: a {} needs a name", kind);
  DPLAB_CHECK(bool(e.make), "Registry: {} '{}' has no factory", kind, e.name);
  for (const Entry& x : entries)
    DPLAB_CHECK(x.name != e.name, "Registry: {} '{}' is already registered", kind, e.name);
  entries.push_back(std::move(e));
}

// Exact name, else nullptr.
template <class Entry>
const Entry* find_entry(const std::vector<Entry>& entries, const std::string& name) {
  for (const Entry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

[[noreturn]] void unknown(const char* key, const char* kind, const std::string& name,
                          const std::vector<std::string>& known) {
  throw UsageError(fmt::format("option {}: unknown {} {} (known: {})", key, kind,
                               quoted_excerpt(name), fmt::join(known, ", ")));
}

}  // namespace

Registry& Registry::add(ModelEntry e) {
  add_entry(models_, std::move(e), "model");
  return *this;
}
Registry& Registry::add(DatasetEntry e) {
  add_entry(datasets_, std::move(e), "dataset");
  return *this;
}
Registry& Registry::add(StrategyEntry e) {
  add_entry(strategies_, std::move(e), "algorithm");
  return *this;
}
Registry& Registry::add(OptimizerEntry e) {
  add_entry(optimizers_, std::move(e), "optimizer");
  return *this;
}
Registry& Registry::add(ScheduleEntry e) {
  // The warm-up is applied here, the one place every schedule passes (registry.h).
  if (e.make)
    e.make = [inner = std::move(e.make)](const Options& o, int64_t total_epochs) {
      return with_warmup(inner(o, total_epochs), o);
    };
  add_entry(schedules_, std::move(e), "lr schedule");
  return *this;
}

Registry& Registry::add_model(std::string name, Shape input_shape, int num_classes,
                              std::function<std::shared_ptr<Module>(int num_classes)> make,
                              std::string help) {
  DPLAB_CHECK(bool(make), "Registry: model '{}' has no factory", name);
  ModelEntry e;
  e.name = name;
  e.help = std::move(help);
  e.input_shape = std::move(input_shape);
  e.num_classes = num_classes;
  e.make = [name, make = std::move(make)](const ModelArgs& a) {
    DPLAB_CHECK_OPTION(
        !a.zero_init_residual,
        "option model.zero_init_residual: model '{}' does not take it (built-in resnets "
        "only)",
        name);
    std::shared_ptr<Module> m = make(a.num_classes);
    DPLAB_CHECK(m != nullptr, "Registry: model '{}': the factory returned no module", name);
    initialize(*m, a.seed);
    return m;
  };
  return add(std::move(e));
}

const ModelEntry& Registry::model(const std::string& name) const {
  if (const ModelEntry* e = find_entry(models_, name)) return *e;
  unknown("model", "model", name, names_of(models_));
}

const DatasetEntry& Registry::dataset(const std::string& spec) const {
  if (const DatasetEntry* e = find_entry(datasets_, spec)) return *e;
  for (const DatasetEntry& e : datasets_)
    if (e.name.size() > 1 && e.name.back() == ':' && spec.starts_with(e.name)) return e;
  if (const DatasetEntry* e = find_entry(datasets_, std::string("*"))) return *e;
  unknown("data", "dataset", spec, names_of(datasets_));
}

const StrategyEntry& Registry::strategy(const std::string& name) const {
  if (const StrategyEntry* e = find_entry(strategies_, name)) return *e;
  unknown("algo", "algorithm", name, names_of(strategies_));
}

const OptimizerEntry& Registry::optimizer(const std::string& name) const {
  if (const OptimizerEntry* e = find_entry(optimizers_, name)) return *e;
  unknown("optim", "optimizer", name, names_of(optimizers_));
}

const ScheduleEntry& Registry::schedule(const std::string& name) const {
  if (const ScheduleEntry* e = find_entry(schedules_, name)) return *e;
  unknown("lr.schedule", "lr schedule", name, names_of(schedules_));
}

std::optional<std::vector<std::string>> Registry::names_for(const std::string& key) const {
  if (key == "model") return names_of(models_);
  if (key == "data") return names_of(datasets_);
  if (key == "algo") return names_of(strategies_);
  if (key == "optim") return names_of(optimizers_);
  if (key == "lr.schedule") return names_of(schedules_);
  return std::nullopt;
}

void check_accumulation(const StrategyEntry& algo, int64_t steps) {
  if (steps <= 1 || algo.averages_gradients) return;
  throw UsageError(fmt::format(
      "option accumulate_steps = {}: algorithm '{}' does not average gradients step by step "
      "(summing micro-batch gradients commutes only with averaging algorithms such as local "
      "and allreduce); use accumulate_steps = 1",
      steps, algo.name));
}

void check_launch(const StrategyEntry& algo, int launched_ranks) {
  if (!algo.single_process || launched_ranks <= 1) return;
  throw UsageError(fmt::format(
      "option algo = {}: this algorithm runs in one process, but the launcher started {} ranks; "
      "they would train {} independent copies writing the same out directory. Run it without "
      "mpiexec (or with -n 1), or choose a distributed algorithm (allreduce for the same "
      "update on every rank)",
      algo.name, launched_ranks, launched_ranks));
}

std::shared_ptr<Module> Registry::make_model(const std::string& name, const ModelArgs& args) const {
  const ModelEntry& e = model(name);
  DPLAB_CHECK(args.num_classes == -1 || args.num_classes >= 1,
              "model '{}': num_classes = {} (use -1 for the default of {})", name, args.num_classes,
              e.num_classes);
  ModelArgs a = args;
  if (a.num_classes == -1) a.num_classes = e.num_classes;
  return e.make(a);
}

std::string check_option_value(const std::string& key, const std::string& value,
                               const Registry& registry) {
  const ValueRule* rule = option_value_rule(key);
  const auto names = registry.names_for(key);
  if (key != "data" && names && rule != nullptr && rule->kind == ValueRule::Kind::choice)
    return check_choice(key, value, *names);
  return check_option_value(key, value);
}

void check_config_values(const Options& from_file, const Options& opt, const std::string& path,
                         const Registry& registry,
                         const std::map<std::string, std::string>* places) {
  for (const auto& [key, value] : from_file.values()) {
    const auto it = opt.values().find(key);
    if (it == opt.values().end() || it->second != value) continue;  // a flag or --set replaced it
    const std::string why = check_option_value(key, value, registry);
    if (!why.empty())
      throw UsageError(fmt::format("{}: {}", config_value_place(key, path, places), why));
  }
}

void check_option_values(const Options& opt, const Registry& registry) {
  for (const auto& [key, value] : opt.values()) {
    std::string why;
    if (key == "data") {
      (void)registry.dataset(value);  // exact name, prefix or "*"; a UsageError otherwise
    } else if (const auto names = registry.names_for(key)) {
      why = check_choice(key, value, *names);
    } else {
      why = check_option_value(key, value);
    }
    if (!why.empty()) throw UsageError(why);
  }
}

}  // namespace dplab
