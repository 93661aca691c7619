// The GPU tracks of a trace (core/trace/gpu_timeline.h): a pair of timing CUDA events per span,
// recorded on the device's compute or comm stream, read back by resolve() after one
// cudaEventSynchronize on the last event recorded (every earlier event of both streams has
// completed by then only if it was recorded before; resolve synchronises both streams' last
// events). Device times become host times through an anchor: an event whose completion the
// host observed (recorded on an idle compute stream and synchronised at creation), so
// ts = anchor's host time + cudaEventElapsedTime(anchor, event).
#include <map>
#include <mutex>
#include <vector>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#include "dplab/core/trace/gpu_timeline.h"

namespace dplab::trace {
namespace {

cudaEvent_t timing_event() {
  cudaEvent_t e = nullptr;
  DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));
  return e;
}

class CudaTimeline : public GpuTimeline {
 public:
  explicit CudaTimeline(int device) : device_(device) {
    cuda::ScopedDevice guard(device_);
    anchor_ = timing_event();
    // Everything enqueued so far finishes first, so the anchor completes when recorded.
    cuda::wait_stream(cuda::compute_stream(device_), "GPU trace start: the compute stream");
    cuda::wait_stream(cuda::comm_stream(device_), "GPU trace start: the comm stream");
    DPLAB_CUDA_CHECK(cudaEventRecord(anchor_, cuda::compute_stream(device_)));
    cuda::wait_event(anchor_, "GPU trace start: the anchor event");
    anchor_host_ = Clock::now();
  }
  ~CudaTimeline() override {
    for (auto& [h, s] : slots_) {
      if (s.start) cudaEventDestroy(s.start);
      if (s.stop) cudaEventDestroy(s.stop);
    }
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
    if (anchor_) cudaEventDestroy(anchor_);
    if (order_) cudaEventDestroy(order_);
  }

  int begin(int tid) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda::ScopedDevice guard(device_);
    Slot s;
    s.tid = tid;
    s.start = take_event_locked();
    DPLAB_CUDA_CHECK(cudaEventRecord(s.start, stream(tid)));
    const int h = next_handle_++;
    slots_.emplace(h, std::move(s));
    return h;
  }

  int begin_comm_after_compute() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      cuda::ScopedDevice guard(device_);
      // One reusable ordering event: a stream wait uses the record made before it.
      if (!order_) DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&order_, cudaEventDisableTiming));
      DPLAB_CUDA_CHECK(cudaEventRecord(order_, cuda::compute_stream(device_)));
      DPLAB_CUDA_CHECK(cudaStreamWaitEvent(cuda::comm_stream(device_), order_, 0));
    }
    return begin(5);  // the comm track (trace::kGpuComm)
  }

  void end(int handle, std::string name, const char* cat, int64_t step) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda::ScopedDevice guard(device_);
    Slot& s = slots_.at(handle);
    s.stop = take_event_locked();
    DPLAB_CUDA_CHECK(cudaEventRecord(s.stop, stream(s.tid)));
    s.name = std::move(name);
    s.cat = cat;
    s.step = step;
  }

  size_t pending() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return slots_.size();
  }

  void resolve(Clock::time_point origin, const std::function<void(const GpuSpan&)>& emit) override {
    std::lock_guard<std::mutex> lock(mu_);
    cuda::ScopedDevice guard(device_);
    // One wait per stream for everything recorded so far (not one per event).
    cuda::wait_stream(cuda::compute_stream(device_), "GPU trace resolve: the compute stream");
    cuda::wait_stream(cuda::comm_stream(device_), "GPU trace resolve: the comm stream");
    const double anchor_us =
        std::chrono::duration<double, std::micro>(anchor_host_ - origin).count();
    for (auto it = slots_.begin(); it != slots_.end();) {
      Slot& s = it->second;
      if (!s.stop) {  // still open (begun on another thread): kept for the next resolve
        ++it;
        continue;
      }
      float a = 0, b = 0;
      DPLAB_CUDA_CHECK(cudaEventElapsedTime(&a, anchor_, s.start));
      DPLAB_CUDA_CHECK(cudaEventElapsedTime(&b, anchor_, s.stop));
      emit(GpuSpan{s.name, s.cat, s.tid, s.step, anchor_us + 1000.0 * a, 1000.0 * (b - a)});
      free_.push_back(s.start);
      free_.push_back(s.stop);
      it = slots_.erase(it);
    }
  }

 private:
  struct Slot {
    int tid = 0;
    cudaEvent_t start = nullptr, stop = nullptr;
    std::string name;
    const char* cat = "";
    int64_t step = -1;
  };
  cudaStream_t stream(int tid) const {
    return tid == 5 ? cuda::comm_stream(device_) : cuda::compute_stream(device_);
  }
  cudaEvent_t take_event_locked() {
    if (free_.empty()) return timing_event();
    cudaEvent_t e = free_.back();
    free_.pop_back();
    return e;
  }

  int device_;
  mutable std::mutex mu_;
  cudaEvent_t anchor_ = nullptr;
  cudaEvent_t order_ = nullptr;  // begin_comm_after_compute's cross-stream wait
  Clock::time_point anchor_host_;
  std::map<int, Slot> slots_;  // by handle
  int next_handle_ = 0;
  std::vector<cudaEvent_t> free_;  // reused: creating events is not free
};

}  // namespace

std::unique_ptr<GpuTimeline> make_gpu_timeline(Device device) {
  if (!device.is_cuda()) return nullptr;
  return std::make_unique<CudaTimeline>(device.index);
}

}  // namespace dplab::trace
