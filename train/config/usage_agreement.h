// Usage errors under mpiexec. Every rank parses the same command line and config file, so a
// usage error is normally every rank's; it must be printed once and end every rank with exit
// status 2, through an ordinary MPI_Finalize (no MPI_Abort: that is for a failure one rank saw,
// exit status 1). The rule: rank 0 prints a UsageError, the other ranks exit silently
// (tools/dplab/main.cpp).
#pragma once
#include <functional>

namespace dplab::cli {

// Runs `f` (reading and checking the options) on every rank. With MPI running on more than one
// rank, the ranks then agree (two small collectives every rank reaches, so none waits): when
// `f` threw a UsageError on any rank, every rank throws the lowest such rank's message
// (prefixed "rank R: " when not every rank failed). Other exceptions propagate as they are.
void agree_on_usage(const std::function<void()>& f);

// True on the rank that prints a usage error: rank 0 of a running MPI world or, before MPI
// starts, the launcher's rank 0 (PMI_RANK, OMPI_COMM_WORLD_RANK); true when started alone.
bool reports_usage_errors();

}  // namespace dplab::cli
