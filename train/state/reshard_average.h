// The consensus of a checkpoint's rank files, for `--resume DIR --reshard` (train/state/reshard.h,
// docs/resharding.md): one state, formed entry by entry from every old rank's file by the rules
// of the algorithm's resharding policy, that each new rank loads as if it were its own file.
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

#include "dplab/core/state_dict.h"
#include "dplab/train/state/checkpoint_store.h"

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

// Every rank file of `m`, read in rank order (each named by its file).
std::vector<StateDict> read_rank_files(const Manifest& m);

// The state the new ranks load: model.*, optim.* and algo.* combined by `rules` (algo keys of
// rule `fresh` from `fresh_algo`, the new strategy's save_state before loading), everything
// else (loop position, amp.*, schedule.*, dplab.*) rank 0's. Errors name the file and the key.
StateDict consensus_state(const Manifest& m, const std::vector<StateDict>& files,
                          const ConsensusRules& rules, const StateDict& fresh_algo);

// The rule `rules` gives algorithm key `key` (without "algo.").
Combine algo_rule(const ConsensusRules& rules, const std::string& key);

}  // namespace dplab
