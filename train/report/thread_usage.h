// What the kernel counts for the calling thread (getrusage RUSAGE_THREAD): the two figures that
// tell a researcher whether a rank's measured compute was disturbed.
//  - involuntary context switches: the thread was preempted while runnable (more runnable
//    threads than cores). Each one costs refilling caches, TLB and prefetch streams when the
//    thread resumes; that refill is CPU time, so measured compute (cluster.compute = measured)
//    grows with it (docs/virtual_cluster.md, "Measured compute": +2-4% at 4 ranks per core).
//  - major page faults: a page had to be read from disk or swap; the fault's kernel work is
//    CPU time of the thread too.
// Recorded per rank and epoch in rank_R.jsonl (docs/metrics_schema.md).
#pragma once
#include <cstdint>

namespace dplab {

struct ThreadUsage {
  int64_t involuntary_switches = 0;
  int64_t voluntary_switches = 0;
  int64_t major_faults = 0;
  int64_t minor_faults = 0;

  ThreadUsage operator-(const ThreadUsage& o) const {
    return {involuntary_switches - o.involuntary_switches,
            voluntary_switches - o.voluntary_switches, major_faults - o.major_faults,
            minor_faults - o.minor_faults};
  }
};

// The calling thread's counts since it started (zeros where the platform has no RUSAGE_THREAD).
ThreadUsage thread_usage_now();

}  // namespace dplab
