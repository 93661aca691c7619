// How an algorithm's checkpoint continues on another number of ranks (`dplab train --resume DIR
// --reshard`, train/state/reshard.h): the rules that form one state from the old ranks' files,
// entry by entry. Each built-in algorithm states its policy in its own file
// (<name>_reshard_policy, listed by comm/registry.h builtin_reshard_policy); docs/resharding.md
// has the table and each argument.
//
//   same   global state: rank 0's value, checked equal in every file (an error otherwise)
//   rank0  rank 0's value, the others ignored (per-rank statistics and counters; documented)
//   mean   the average of the replicas: f32 tensors averaged over the old ranks (summed in
//          double in rank order, optionally weighted); any other tensor or value must agree
//   fresh  the new world's own value: the state the new run's strategy set up for its world
//          (re-derived or reset), old values dropped
#pragma once
#include <map>
#include <string>
#include <vector>

namespace dplab {

enum class Combine { same, rank0, mean, fresh };

// The rule for algorithm state key `key` (without "algo."): exact, or a prefix ending in '*'.
struct StateRule {
  std::string key;
  Combine how = Combine::same;
};

struct ConsensusRules {
  Combine model = Combine::rank0;      // model.* (rank0: identical replicas)
  Combine optimizer = Combine::rank0;  // optim.*
  // Integer optimizer tensors (step counts) that differ between the ranks: rank 0's instead
  // of an error (algorithms whose ranks take different numbers of steps: Oscars).
  bool differing_step_counts = false;
  std::vector<StateRule> algo;  // the first that matches; unmatched keys: same
  // The model's mean weighted by this algorithm value of each file (SGP's push-sum weight:
  // sum_i w_i z_i / sum_i w_i); "" or absent in the files: unweighted.
  std::string model_weight;
  std::map<std::string, std::string> set;  // algorithm values set outright (key without "algo.")
};

// What --reshard does with an algorithm's checkpoint.
struct ReshardPolicy {
  bool reshards = false;
  std::string consensus;  // how model, optimizer and algorithm state are formed (for the log)
  std::string refusal;    // why it cannot be resharded (when it refuses)
  ConsensusRules rules;   // how each state entry is combined
};

// The checkpoint's trajectory options (its manifest's config), which a policy may read.
using CheckpointConfig = std::map<std::string, std::string>;

// A policy for replicas that differ (every algorithm but allreduce): the new ranks start from
// their average, and each rank's own optimizer state (momentum, inner AdamW moments) from the
// average of the old ranks'; `consensus` says how.
inline ReshardPolicy averaging_policy(std::string consensus) {
  ReshardPolicy p;
  p.reshards = true;
  p.consensus = std::move(consensus);
  p.rules.model = Combine::mean;
  p.rules.optimizer = Combine::mean;
  return p;
}

// GradSync's error-feedback residuals (top-k, PowerSGD; its Q agrees on every rank): averaged.
inline StateRule compression_residuals_rule() {
  return {"sync.*", Combine::mean};
}

}  // namespace dplab
