// Host waits for the device, bounded (issue #19 item 3, issue #31 item 2): every wait of the host
// for a stream, an event or a copy goes through poll_until (core/host_wait.h), so a stream held
// up by a stalled collective makes the waiting thread throw after comm.timeout_s, naming what
// waited, instead of hanging. The exception then takes the failure path of every rank
// (comm/mpi_env.h: run_mpi_main aborts all ranks; the NCCL communicators abort rather than
// destroy at teardown, nccl_communicator.cpp). Nothing in core/cuda, comm/ or tools/ calls
// cudaStreamSynchronize, cudaEventSynchronize or cudaDeviceSynchronize, or copies from the
// device into pageable host memory (which blocks inside cudaMemcpyAsync until the stream gets
// there); tests/core/unbounded_waits_check.cmake checks the sources for it.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "dplab/core/host_wait.h"

namespace dplab::cuda {

using dplab::host_wait_timeout;
using dplab::HostWaitHooks;
using dplab::set_host_wait_timeout;

// Waits until all work enqueued on `stream` has completed (cudaStreamQuery polled), with the
// process-wide limit. Throws dplab::Error naming `what`, the limit and comm.timeout_s on
// timeout, or the CUDA error the stream reports.
void wait_stream(cudaStream_t stream, const std::string& what);
// The same with an explicit limit (0: unbounded).
void wait_stream(cudaStream_t stream, const std::string& what, double timeout_s);
// Waits until the work captured by `event` has completed (cudaEventQuery polled), likewise.
void wait_event(cudaEvent_t event, const std::string& what);

// Device -> host in `stream`'s order: through a pinned staging buffer (a copy into pinned memory
// is asynchronous, so the host then waits with the limit; into pageable memory the call itself
// would block without one). `dst` is ordinary host memory.
void copy_to_host(void* dst, const void* src, size_t nbytes, cudaStream_t stream,
                  const std::string& what);
// Host -> device in `stream`'s order, likewise staged, and complete when it returns (the caller
// may reuse `src` at once).
void copy_from_host(void* dst, const void* src, size_t nbytes, cudaStream_t stream,
                    const std::string& what);

// Device -> host in `stream`'s order into `pinned_dst`, a page-locked buffer (core/cuda/pinned.h):
// a DMA that returns at once; the caller records an event after it and waits for that (with the
// limit) before reading the buffer (core/host_readback.h).
void copy_to_pinned_async(void* pinned_dst, const void* src, size_t nbytes, cudaStream_t stream);

// For destructors: waits at most `timeout_s` (0: the process-wide limit, or none) for `stream`
// and says whether it drained. Never throws; clears the error record it leaves.
bool stream_drained_quietly(cudaStream_t stream, double timeout_s = 0);
// The same for the work captured by `event`.
bool event_done_quietly(cudaEvent_t event, double timeout_s = 0);

}  // namespace dplab::cuda
