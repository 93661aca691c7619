#include "dplab/comm/algorithms/derangement.h"

#include <numeric>

#include "dplab/core/error.h"
#include "dplab/core/usage_error.h"

namespace dplab {

DerangementSampler parse_derangement_sampler(const std::string& text, const std::string& what) {
  if (text == "balanced") return DerangementSampler::balanced;
  if (text == "uniform") return DerangementSampler::uniform;
  DPLAB_FAIL_OPTION("option {}: expected balanced or uniform, got '{}'", what, text);
}

std::vector<int> balanced_derangement(PhiloxStream& rng, int n,
                                      const std::vector<uint32_t>& roulette, int* restarts) {
  DPLAB_CHECK(n >= 2, "balanced_derangement: a derangement needs n >= 2 ranks, got {}", n);
  const size_t nn = static_cast<size_t>(n) * static_cast<size_t>(n);
  DPLAB_CHECK(roulette.empty() || roulette.size() == nn,
              "balanced_derangement: roulette table has {} entries, expected n*n = {}",
              roulette.size(), nn);
  if (restarts) *restarts = 0;
  std::vector<int> dest(static_cast<size_t>(n));
  std::vector<char> taken(static_cast<size_t>(n));
  for (int attempt = 0;; ++attempt) {
    DPLAB_CHECK(attempt < 100000,
                "balanced_derangement: no derangement after {} restarts (n = {}); the roulette "
                "table leaves no valid assignment",
                attempt, n);
    std::fill(taken.begin(), taken.end(), 0);
    bool dead_end = false;
    for (int i = 0; i < n && !dead_end; ++i) {
      // Row i of the roulette with the diagonal and the already chosen columns zeroed
      // (Algorithm 2, lines 2-4); the sum is the renormaliser of line 6.
      auto weight = [&](int j) -> uint64_t {
        if (j == i || taken[size_t(j)]) return 0;
        return roulette.empty() ? 1 : roulette[size_t(i) * size_t(n) + size_t(j)];
      };
      uint64_t sum = 0;
      for (int j = 0; j < n; ++j) sum += weight(j);
      if (sum == 0) {  // the paper divides by zero here: restart the draw
        dead_end = true;
        break;
      }
      // Line 7, choice(world_size, roulette): the integer spin of the roulette wheel.
      uint64_t spin = rng.below(sum);
      int chosen = -1;
      for (int j = 0; j < n; ++j) {
        const uint64_t w = weight(j);
        if (spin < w) {
          chosen = j;
          break;
        }
        spin -= w;
      }
      dest[size_t(i)] = chosen;
      taken[size_t(chosen)] = 1;
    }
    if (!dead_end) return dest;
    if (restarts) ++*restarts;
  }
}

std::vector<int> uniform_derangement(PhiloxStream& rng, int n, int* restarts) {
  DPLAB_CHECK(n >= 2, "uniform_derangement: a derangement needs n >= 2 ranks, got {}", n);
  if (restarts) *restarts = 0;
  std::vector<int> d(static_cast<size_t>(n));
  for (;;) {
    std::iota(d.begin(), d.end(), 0);
    for (int i = n - 1; i > 0; --i) std::swap(d[size_t(i)], d[rng.below(uint64_t(i) + 1)]);
    if (is_derangement(d)) return d;
    if (restarts) ++*restarts;
  }
}

std::vector<int> draw_derangement(DerangementSampler kind, PhiloxStream& rng, int n,
                                  int* restarts) {
  return kind == DerangementSampler::balanced ? balanced_derangement(rng, n, {}, restarts)
                                              : uniform_derangement(rng, n, restarts);
}

bool is_derangement(const std::vector<int>& d) {
  const int n = static_cast<int>(d.size());
  std::vector<char> seen(d.size(), 0);
  for (int i = 0; i < n; ++i) {
    const int j = d[size_t(i)];
    if (j < 0 || j >= n || j == i || seen[size_t(j)]) return false;
    seen[size_t(j)] = 1;
  }
  return n >= 2;
}

std::vector<int> inverse_map(const std::vector<int>& d) {
  std::vector<int> inv(d.size(), -1);
  for (size_t i = 0; i < d.size(); ++i) {
    DPLAB_CHECK(d[i] >= 0 && size_t(d[i]) < d.size() && inv[size_t(d[i])] == -1,
                "inverse_map: entry {} = {} makes the map not a permutation of 0..{}", i, d[i],
                d.size() - 1);
    inv[size_t(d[i])] = int(i);
  }
  return inv;
}

}  // namespace dplab
