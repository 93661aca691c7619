// Host waits for a stream, bounded (issue #19, item 3). cudaStreamSynchronize waits without
// limit: with NCCL, the compute stream waits on the device for collectives, so a stalled peer
// would hang the host in the next synchronisation forever (the cross-entropy target check, a
// loss read back for logging). These waits poll cudaStreamQuery instead and throw once the limit
// has passed, naming what waited; the exception then takes the failure path of every rank
// (comm/mpi_env.h: run_mpi_main aborts all ranks; the NCCL communicators abort rather than
// destroy at teardown, nccl_communicator.cpp).
//
// The limit is comm.timeout_s: nccl_world() sets it when it builds the communicators (0 = no
// limit, the default, right for a single device where no peer can stall the stream), with hooks
// into comm/stall_report.h: while waiting, the rank answers other ranks' "what are you waiting
// in?" queries (as every MPI wait does), and at its own timeout it asks the others and names the
// ranks that did not arrive. It is process-wide configuration, set once at start-up: the one
// global of core/cuda besides the per-device streams and handles.
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>

namespace dplab::cuda {

struct HostWaitHooks {
  // Called every 64 polls (about every 3 ms) with what waits and for how long so far.
  std::function<void(const std::string& what, double waited_s)> idle;
  // Called once at the timeout; its text ends the error message.
  std::function<std::string(const std::string& what)> on_timeout;
};

// Seconds a host wait for a stream may take before it throws (0: unbounded), and the hooks.
void set_host_wait_timeout(double seconds, HostWaitHooks hooks = {});
double host_wait_timeout();

// Waits until all work enqueued on `stream` has completed: a short spin, then polling with
// sleeps (~50 us), with the limit above. Throws dplab::Error naming `what`, the limit and
// comm.timeout_s on timeout, or the CUDA error the stream reports.
void wait_stream(cudaStream_t stream, const std::string& what);
// The same with an explicit limit (0: unbounded).
void wait_stream(cudaStream_t stream, const std::string& what, double timeout_s);

}  // namespace dplab::cuda
