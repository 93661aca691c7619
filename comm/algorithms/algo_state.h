// Helpers for Strategy::save_state/load_state (comm/strategy.h): the checks every algorithm's
// load_state makes before it touches its members, so a checkpoint of another algorithm, another
// world size or another model is an error naming the key instead of a silently wrong run.
#pragma once
#include <cstdint>
#include <string>

#include "dplab/core/state_dict.h"
#include "dplab/core/tensor.h"

namespace dplab {

// Every strategy saves its name under "algorithm"; load_state checks it first.
void save_algorithm_name(StateDict& out, const std::string& algo);
void check_algorithm_name(const StateDict& in, const std::string& algo);

// Copies state tensor `key` into `dst` (any device), which must have the same shape and dtype.
void restore_tensor(const StateDict& in, const std::string& algo, const std::string& key,
                    Tensor dst);

// An integer state value in [lo, hi]; anything else throws naming the key and the range.
int64_t state_int(const StateDict& in, const std::string& algo, const std::string& key, int64_t lo,
                  int64_t hi);

// A finite double state value.
double state_finite(const StateDict& in, const std::string& algo, const std::string& key);

}  // namespace dplab
