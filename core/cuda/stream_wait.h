// Host waits for a stream, bounded (issue #19, item 3). cudaStreamSynchronize waits without
// limit: with NCCL, the compute stream waits on the device for collectives, so a stalled peer
// would hang the host in the next synchronisation forever (the cross-entropy target check, a
// loss read back for logging). These waits poll cudaStreamQuery instead and throw once the limit
// has passed, naming what waited; the exception then takes the failure path of every rank
// (comm/mpi_env.h: run_mpi_main aborts all ranks; the NCCL communicators abort rather than
// destroy at teardown, nccl_communicator.cpp).
//
// The limit is comm.timeout_s: nccl_world() sets it when it builds the communicators (0 = no
// limit, the default, right for a single device where no peer can stall the stream). It is
// process-wide configuration, set once at start-up and read with an atomic load: the one global
// of core/cuda besides the per-device streams and handles.
#pragma once
#include <cuda_runtime.h>

#include <string>

namespace dplab::cuda {

// Seconds a host wait for a stream may take before it throws (0: unbounded).
void set_host_wait_timeout(double seconds);
double host_wait_timeout();

// Waits until all work enqueued on `stream` has completed: a short spin, then polling with
// sleeps (~50 us), with the limit above. Throws dplab::Error naming `what`, the limit and
// comm.timeout_s on timeout, or the CUDA error the stream reports.
void wait_stream(cudaStream_t stream, const std::string& what);
// The same with an explicit limit (0: unbounded).
void wait_stream(cudaStream_t stream, const std::string& what, double timeout_s);

}  // namespace dplab::cuda
