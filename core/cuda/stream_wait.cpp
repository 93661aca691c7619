#include "dplab/core/cuda/stream_wait.h"

#include <algorithm>
#include <cstring>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/pinned.h"

namespace dplab::cuda {
namespace {

// cudaErrorNotReady is not an error, but it stays in the thread's last-error record, which the
// kernel launchers report (check.h): the probes clear it (issue #19, item 1).
bool done(cudaError_t e) {
  if (e == cudaSuccess) return true;
  (void)cudaGetLastError();
  if (e != cudaErrorNotReady) DPLAB_CUDA_CHECK(e);
  return false;
}

// Staging buffers are pooled (pinned.h); large copies go through in pieces of this size, so a
// 1 GiB read-back does not pin 1 GiB.
constexpr size_t kStageBytes = size_t{64} << 20;

}  // namespace

void wait_stream(cudaStream_t stream, const std::string& what) {
  wait_stream(stream, what, host_wait_timeout());
}

void wait_stream(cudaStream_t stream, const std::string& what, double timeout_s) {
  poll_until([stream] { return done(cudaStreamQuery(stream)); }, what, timeout_s);
}

void wait_event(cudaEvent_t event, const std::string& what) {
  poll_until([event] { return done(cudaEventQuery(event)); }, what);
}

void copy_to_host(void* dst, const void* src, size_t nbytes, cudaStream_t stream,
                  const std::string& what) {
  if (nbytes == 0) return;
  PinnedBuffer stage(std::min(nbytes, kStageBytes));
  for (size_t off = 0; off < nbytes; off += stage.capacity()) {
    const size_t n = std::min(stage.capacity(), nbytes - off);
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(stage.data(), static_cast<const char*>(src) + off, n,
                                     cudaMemcpyDeviceToHost, stream));
    wait_stream(stream, what);
    std::memcpy(static_cast<char*>(dst) + off, stage.data(), n);
  }
}

void copy_from_host(void* dst, const void* src, size_t nbytes, cudaStream_t stream,
                    const std::string& what) {
  if (nbytes == 0) return;
  PinnedBuffer stage(std::min(nbytes, kStageBytes));
  for (size_t off = 0; off < nbytes; off += stage.capacity()) {
    const size_t n = std::min(stage.capacity(), nbytes - off);
    std::memcpy(stage.data(), static_cast<const char*>(src) + off, n);
    DPLAB_CUDA_CHECK(cudaMemcpyAsync(static_cast<char*>(dst) + off, stage.data(), n,
                                     cudaMemcpyHostToDevice, stream));
    wait_stream(stream, what);  // the staging buffer is reused by the next piece
  }
}

void copy_to_pinned_async(void* pinned_dst, const void* src, size_t nbytes, cudaStream_t stream) {
  if (nbytes == 0) return;
  DPLAB_CUDA_CHECK(cudaMemcpyAsync(pinned_dst, src, nbytes, cudaMemcpyDeviceToHost, stream));
}

bool stream_drained_quietly(cudaStream_t stream, double timeout_s) {
  return poll_quietly([stream] { return done(cudaStreamQuery(stream)); },
                      timeout_s > 0 ? timeout_s : host_wait_timeout());
}

bool event_done_quietly(cudaEvent_t event, double timeout_s) {
  return poll_quietly([event] { return done(cudaEventQuery(event)); },
                      timeout_s > 0 ? timeout_s : host_wait_timeout());
}

}  // namespace dplab::cuda
