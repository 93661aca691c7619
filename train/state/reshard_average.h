// The consensus of a checkpoint's rank files, for `--resume DIR --reshard` (train/state/reshard.h,
// docs/resharding.md): one state, formed entry by entry from every old rank's file by the rules
// of the algorithm's resharding policy (comm/reshard_policy.h: same, rank0, mean, fresh), that
// each new rank loads as if it were its own file.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "dplab/comm/reshard_policy.h"
#include "dplab/core/state_dict.h"
#include "dplab/train/state/checkpoint_store.h"

namespace dplab {

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
