// A rank's virtual clock (docs/virtual_cluster.md, "The clock"): seconds of modelled time.
// Compute advances it by the CPU time of the rank's compute thread (the thread that built the
// clock) x compute_scale, so descheduled time (other processes, 64 ranks on 2 cores) does not
// count; or, in manual mode, only by add_compute() (compute profiles, tests). Communication
// moves it: wait_until(end) after a wait. CPU time the compute thread spends inside
// communication calls (posting, spinning in a wait) is discarded, not counted as compute.
// Thread-safe; the CPU clock read is always the owner thread's, whoever calls. Only the owner's
// waits move the clock and only the owner discards CPU time: a helper thread (GradSync's
// communication thread) waiting for an operation leaves the clock alone; the owner accounts
// for the operation when it waits for the helper (GradSync::finish).
#pragma once
#include <pthread.h>
#include <time.h>

#include <mutex>

namespace dplab::cluster {

class VirtualClock {
 public:
  enum class Compute { measured, manual };
  // Binds to the calling thread (its CPU time is the rank's compute). Starts at 0.
  VirtualClock(Compute mode, double compute_scale);

  Compute mode() const { return mode_; }
  double compute_scale() const { return scale_; }
  // Commits the compute since the last reading and returns the virtual time.
  double now();
  // Adds dt seconds of compute as they are (manual and profile mode: dt is already the modelled
  // device's time, so compute_scale does not apply).
  void add_compute(double dt);
  // Forgets the owner's CPU time since the last reading: it was spent in communication.
  // No-op on other threads.
  void discard_cpu();
  // After a wait for an operation ending at `end`: the clock moves there if that is later
  // (overlap is counted, not assumed); CPU time spent waiting is discarded. No-op on other
  // threads.
  void wait_until(double end);
  // Whether the owner's CPU time counts as compute (measured mode; initially it does). The
  // training driver stops counting between steps: loading, records, evaluation and checkpoints
  // are not part of the modelled step, so the CPU time they take is discarded; readings, waits
  // and add_compute() work as always.
  void count_compute(bool on);
  // Measured mode: the compute from now on counts x f on top of compute_scale (a slow event's
  // factor for the step that begins, comm/cluster/events.h); 1 until set.
  void set_compute_factor(double f);
  bool counting_compute() const;
  // Whether the calling thread is the owner (the rank's compute thread).
  bool is_owner() const { return pthread_equal(pthread_self(), owner_) != 0; }
  // The owner thread's CPU seconds (CLOCK_THREAD_CPUTIME_ID of that thread).
  double owner_cpu_seconds() const;

 private:
  void commit_locked();
  Compute mode_;
  double scale_;
  pthread_t owner_;
  clockid_t cpu_clock_{};
  mutable std::mutex mu_;
  double t_ = 0;         // virtual seconds
  double cpu_last_ = 0;  // owner CPU seconds at the last commit or discard
  bool counting_ = true;
  double factor_ = 1.0;  // set_compute_factor
};

}  // namespace dplab::cluster
