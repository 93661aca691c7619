// Bounded host waits (issue #31, item 2). A host thread that waits for a device must never wait
// without limit: with NCCL the compute stream may wait on the device for a collective that a
// stalled or failed peer never joins, and cudaStreamSynchronize, cudaEventSynchronize or a copy
// into pageable host memory would then hang the process forever, holding every lock it holds.
// Every such wait in dplab instead polls a non-blocking probe (cudaStreamQuery, cudaEventQuery,
// ncclCommGetAsyncError) through poll_until(), which gives up after a limit and throws, naming
// what waited. This header is device-free so the loop itself is tested without a GPU; the CUDA
// waits built on it are in core/cuda/stream_wait.h.
//
// The process-wide limit is comm.timeout_s: nccl_world() sets it when it builds the
// communicators (0 = no limit, the default, right for a single device where no peer can stall a
// stream), with hooks into comm/stall_report.h: while waiting, the rank answers other ranks'
// "what are you waiting in?" queries (as every MPI wait does), and at its own timeout it asks
// the others and names the ranks that did not arrive. It is set once at start-up.
#pragma once
#include <functional>
#include <string>

namespace dplab {

struct HostWaitHooks {
  // Called every 64 polls (about every 3 ms) with what waits and for how long so far.
  std::function<void(const std::string& what, double waited_s)> idle;
  // Called once at the timeout; its text ends the error message.
  std::function<std::string(const std::string& what)> on_timeout;
};

// Seconds a host wait may take before it throws (0: unbounded), and the hooks.
void set_host_wait_timeout(double seconds, HostWaitHooks hooks = {});
double host_wait_timeout();

// Calls `ready` until it returns true: a short spin (64 polls), then polls ~50 us apart. Every
// 64 polls the idle hook runs; once more than `timeout_s` seconds (0: no limit) have passed it
// throws dplab::Error "<what>: the device did not finish within <t> s (comm.timeout_s); <who>",
// <who> from the on_timeout hook. An exception from `ready` (an error the device reports)
// propagates unchanged.
void poll_until(const std::function<bool()>& ready, const std::string& what, double timeout_s);
// The same with the process-wide limit.
void poll_until(const std::function<bool()>& ready, const std::string& what);

// For destructors, which must not throw: polls `ready` for at most `timeout_s` (0: no limit) and
// returns whether it became true. An exception from `ready` counts as false.
bool poll_quietly(const std::function<bool()>& ready, double timeout_s);

}  // namespace dplab
