// Random derangements (permutations without fixed points) for Crossover-SGD's per-segment peer
// maps (papers/crossover-sgd.txt, Algorithm 2; notes §1.4).
//
// Every rank draws the same map from the same shared Philox stream, so no communication is
// needed to agree on a topology. Sampling uses integers only (PhiloxStream::below over integer
// roulette weights), never floating-point renormalisation, so ranks cannot disagree through
// rounding.
//
// Map convention (the paper's "pull" reading of Algorithm 1, lines 5-6): d[i] is the rank that
// rank i RECEIVES from; rank i SENDS to the rank j with d[j] == i (inverse_map(d)[i]).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dplab/core/philox.h"

namespace dplab {

enum class DerangementSampler {
  balanced,  // the paper's load-balanced roulette, restart on a dead end (default)
  uniform,   // Fisher-Yates shuffle, rejecting maps with a fixed point (exactly uniform)
};

// Parses "balanced" or "uniform"; `what` names the option in errors.
DerangementSampler parse_derangement_sampler(const std::string& text, const std::string& what);

// Algorithm 2 of the paper with its defects fixed (notes §1.4): sources i = 0..n-1 choose in
// turn; source i picks destination j with probability proportional to roulette[i][j] among the
// destinations nobody has chosen yet (chosen columns are zeroed, the row renormalised: done here
// as an integer draw below(sum of the remaining weights)). The diagonal is always zero. When a
// row has no weight left (only i itself remains: the paper's division by zero) the whole draw
// restarts from the current position of the same stream, so all ranks restart together.
//
// `roulette` is n*n row-major integer weights (a copy is worked on; the caller's table is never
// mutated); empty = the uniform table, weight 1 off the diagonal (the paper's initial
// stochastic matrix with zero diagonal, 1/(n-1) elsewhere). Requires n >= 2. `restarts`, if
// given, receives the number of dead ends hit.
std::vector<int> balanced_derangement(PhiloxStream& rng, int n,
                                      const std::vector<uint32_t>& roulette = {},
                                      int* restarts = nullptr);

// A derangement drawn uniformly from all derangements of n (n >= 2): Fisher-Yates shuffle,
// rejected and redrawn while it has a fixed point (about e tries on average).
std::vector<int> uniform_derangement(PhiloxStream& rng, int n, int* restarts = nullptr);

std::vector<int> draw_derangement(DerangementSampler kind, PhiloxStream& rng, int n,
                                  int* restarts = nullptr);

// True when `d` is a permutation of 0..n-1 with d[i] != i for every i.
bool is_derangement(const std::vector<int>& d);

// inv[d[i]] = i: the rank each rank sends to under the pull convention above.
std::vector<int> inverse_map(const std::vector<int>& d);

}  // namespace dplab
