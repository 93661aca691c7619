// Slowdown injection: makes one rank's iterations last FACTOR times their natural time, to
// emulate heterogeneous workers (ALGORITHMS.md §6; option `slowdown`, flag --slowdown
// RANK=FACTOR[,RANK=FACTOR...]). Works for every algorithm: the training loop, not the
// algorithm, calls it.
//
// Method: the loop brackets the iteration's compute (forward + backward, and the optimizer
// step) with start()/stop() — waits inside the algorithm's hooks (after_backward, after_step)
// are outside the brackets, so a rank waiting for a slow peer is not slowed further — and then
// calls pause() at one fixed point (after the optimizer step, before Strategy::after_step),
// which SLEEPS (FACTOR - 1) * (measured compute time). Sleeping, not spinning: oversubscribed
// ranks on a shared machine must not steal each other's cores.
#pragma once
#include <chrono>
#include <map>
#include <string>

#include "dplab/core/options.h"

namespace dplab {

class Slowdown {
 public:
  explicit Slowdown(double factor = 1.0);
  // Reads option `slowdown` ("" = none; "RANK=FACTOR[,RANK=FACTOR...]") for this rank. Ranks
  // must be < world_size and factors >= 1.
  static Slowdown from_options(const Options& opt, int rank, int world_size);
  // "2=1.5,3=2" -> {2: 1.5, 3: 2}; throws naming the bad entry.
  static std::map<int, double> parse(const std::string& spec);

  void start();  // compute begins
  void stop();   // compute ends (accumulates since start())
  // Sleeps (factor - 1) * accumulated compute, resets the accumulator, returns seconds slept.
  // Under a virtual cluster (virtual()) sleeps nothing and returns 0.
  double pause();
  // A virtual cluster: the factor multiplies this rank's virtual compute instead (the training
  // driver scales the clock or the replayed profile, train/virtual/virtual_run.h); no sleeping,
  // so the host's time never enters the modelled one.
  void set_virtual() { virtual_ = true; }
  bool is_virtual() const { return virtual_; }

  double factor() const { return factor_; }
  double total_slept_s() const { return slept_; }
  double total_compute_s() const { return compute_total_; }

 private:
  using Clock = std::chrono::steady_clock;
  double factor_;
  Clock::time_point t0_{};
  bool running_ = false;
  double compute_ = 0;        // this iteration's compute so far
  double compute_total_ = 0;  // all iterations
  double slept_ = 0;
  bool virtual_ = false;
};

}  // namespace dplab
