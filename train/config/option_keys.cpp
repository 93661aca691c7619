// The keys of `dplab train` beyond the loop's own (train/config/config.cpp), gathered from
// their declarations beside their readers: the data's (train/data/data_options.h), the
// checkpoints' (train/state/checkpoint_options.h), reporting's (train/report/report_options.h),
// the seed (core/seed_option.h), the communicator's (comm/comm_options.h), a virtual
// cluster run's (train/virtual/virtual_options.h), the optimizers' own (optim/optimizer_options.h),
// the lr schedule's (optim/schedule.h) and every built-in algorithm's
// (comm/algorithms/algorithm_options.h). Nothing here names an algorithm.
#include "dplab/train/config/option_keys.h"
#include "dplab/core/run_options.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "dplab/comm/algorithms/algorithm_options.h"
#include "dplab/comm/comm_options.h"
#include "dplab/optim/optimizer_options.h"
#include "dplab/optim/schedule.h"
#include "dplab/train/data/data_options.h"
#include "dplab/train/report/report_options.h"
#include "dplab/train/state/checkpoint_options.h"
#include "dplab/train/virtual/virtual_options.h"

namespace dplab {
namespace {

// The algorithm whose area a key is listed in: the first (in builtin_algorithm_options' order)
// whose declaration reads it.
const std::map<std::string, std::string>& algorithm_area_of_key() {
  static const std::map<std::string, std::string> m = [] {
    std::map<std::string, std::string> r;
    for (const AlgorithmOptions& a : builtin_algorithm_options())
      for (const OptionDecl& d : a.options.decls()) r.emplace(d.key, a.name);
    return r;
  }();
  return m;
}

std::vector<OptionSpec> gather() {
  std::vector<OptionSpec> v;
  std::set<std::string> seen;
  auto add = [&](const OptionTable& t) {
    for (const OptionDecl& d : t.decls())
      if (seen.insert(d.key).second) v.push_back(d);
  };
  add(data_option_table());
  add(checkpoint_option_table());
  add(report_option_table());
  add(run_option_table());
  add(communicator_option_table());
  add(virtual_run_option_table());
  add(lars_option_table());
  add(adamw_option_table());
  add(lr_schedule_option_table());
  for (const AlgorithmOptions& a : builtin_algorithm_options()) add(a.options);
  return v;
}

}  // namespace

const std::vector<OptionSpec>& component_option_specs() {
  static const std::vector<OptionSpec> specs = gather();
  return specs;
}

std::string option_area(const std::string& key) {
  if (const auto it = algorithm_area_of_key().find(key); it != algorithm_area_of_key().end())
    return it->second;
  const std::string head = key.substr(0, key.find('.'));
  const bool dotted = key.find('.') != std::string::npos;
  if (head == "model") return "model";
  if (head == "data" || key == "eval.batch") return "data";
  if (key == "lr.schedule" || (head == "lr" && dotted)) return "schedule";
  for (const char* k : {"lr", "momentum", "nesterov", "dampening", "wd", "optim", "lars", "adamw",
                        "accumulate_steps", "label_smoothing", "amp"})
    if (head == k) return "optimizer";
  for (const char* k : {"algo", "comm", "ranks_per_node", "link", "slowdown", "cluster"})
    if (head == k) return "comm";
  for (const char* k :
       {"checkpoint", "out", "resume", "init_from", "nonfinite", "nonfinite_check", "preempt"})
    if (head == k) return "checkpoint";
  for (const char* k : {"trace", "metrics", "progress"})
    if (head == k) return "reporting";
  return "run";
}

const std::vector<std::string>& option_areas() {
  static const std::vector<std::string> a = [] {
    std::vector<std::string> r = {"run",      "model",      "data",      "optimizer",
                                  "schedule", "checkpoint", "reporting", "comm"};
    for (const AlgorithmOptions& algo : builtin_algorithm_options()) r.push_back(algo.name);
    return r;
  }();
  return a;
}

bool is_algorithm_area(const std::string& area) {
  const auto& all = builtin_algorithm_options();
  return std::any_of(all.begin(), all.end(),
                     [&](const AlgorithmOptions& a) { return a.name == area; });
}

bool algorithm_reads_area(const std::string& algo, const std::string& area) {
  for (const std::string& key : algorithm_option_keys(algo))
    if (option_area(key) == area) return true;
  return false;
}

std::vector<std::string> algorithm_option_keys(const std::string& algo) {
  std::vector<std::string> keys;
  for (const AlgorithmOptions& a : builtin_algorithm_options())
    if (a.name == algo)
      for (const OptionDecl& d : a.options.decls()) keys.push_back(d.key);
  return keys;
}

}  // namespace dplab
