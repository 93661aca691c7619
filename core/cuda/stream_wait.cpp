#include "dplab/core/cuda/stream_wait.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "dplab/core/cuda/check.h"

namespace dplab::cuda {
namespace {
std::atomic<double>& limit() {
  static std::atomic<double> seconds{0.0};  // configuration: see the header
  return seconds;
}
}  // namespace

void set_host_wait_timeout(double seconds) {
  limit().store(seconds > 0 ? seconds : 0.0);
}

double host_wait_timeout() {
  return limit().load();
}

void wait_stream(cudaStream_t stream, const std::string& what) {
  wait_stream(stream, what, host_wait_timeout());
}

void wait_stream(cudaStream_t stream, const std::string& what, double timeout_s) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  for (int polls = 0;; ++polls) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) DPLAB_CUDA_CHECK(e);
    // cudaErrorNotReady stays in the thread's last-error record, which the kernel launchers
    // report (check.h): clear it (issue #19, item 1).
    (void)cudaGetLastError();
    if (polls < 64) continue;  // short waits (a small copy) finish within the spin
    std::this_thread::sleep_for(std::chrono::microseconds(50));
    if (timeout_s > 0 && (polls & 63) == 0) {
      const double waited = std::chrono::duration<double>(Clock::now() - start).count();
      DPLAB_CHECK(waited <= timeout_s,
                  "{}: the device did not finish within {:g} s (comm.timeout_s); the stream "
                  "probably waits for a collective that a stalled or failed peer never joined",
                  what, timeout_s);
    }
  }
}

}  // namespace dplab::cuda
