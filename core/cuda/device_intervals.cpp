// DeviceIntervals on CUDA: a pair of timing events per interval on the compute stream (events are
// reused: creating them is not free). See core/device_intervals.h.
#include <deque>
#include <mutex>
#include <vector>

#include "dplab/core/cuda/check.h"
#include "dplab/core/cuda/device_guard.h"
#include "dplab/core/cuda/stream.h"
#include "dplab/core/cuda/stream_wait.h"
#include "dplab/core/device_intervals.h"
#include "dplab/core/error.h"

namespace dplab {
namespace {

class CudaIntervals : public DeviceIntervals {
 public:
  explicit CudaIntervals(int device) : device_(device) {}
  ~CudaIntervals() override {
    for (auto& iv : closed_) free_.insert(free_.end(), {iv.start, iv.stop});
    if (open_) free_.push_back(open_);
    for (cudaEvent_t e : free_) cudaEventDestroy(e);  // allowed with work pending
  }

  void begin(DeviceStream s) override {
    std::lock_guard<std::mutex> lock(mu_);
    DPLAB_CHECK(open_ == nullptr, "DeviceIntervals::begin: an interval is already open");
    cuda::ScopedDevice on(device_);
    open_ = take_event();
    DPLAB_CUDA_CHECK(cudaEventRecord(open_, stream(s)));
  }

  void end(DeviceStream s) override {
    std::lock_guard<std::mutex> lock(mu_);
    DPLAB_CHECK(open_ != nullptr, "DeviceIntervals::end without begin");
    cuda::ScopedDevice on(device_);
    cudaEvent_t stop = take_event();
    DPLAB_CUDA_CHECK(cudaEventRecord(stop, stream(s)));
    closed_.push_back({std::exchange(open_, nullptr), stop});
  }

  double take_seconds(bool wait) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_.empty()) return 0.0;
    cuda::ScopedDevice on(device_);
    // Waiting: every stop event (they may be on two streams), once each.
    if (wait)
      for (const Interval& iv : closed_) cuda::wait_event(iv.stop, "device interval timing");
    double total = 0;
    while (!closed_.empty()) {
      const Interval iv = closed_.front();
      const cudaError_t q = cudaEventQuery(iv.stop);
      if (q == cudaErrorNotReady) {
        (void)cudaGetLastError();  // see event.cpp: never leave NotReady in the record
        break;
      }
      DPLAB_CUDA_CHECK(q);
      float ms = 0;
      DPLAB_CUDA_CHECK(cudaEventElapsedTime(&ms, iv.start, iv.stop));
      total += 1e-3 * static_cast<double>(ms);
      free_.insert(free_.end(), {iv.start, iv.stop});
      closed_.pop_front();
    }
    return total;
  }

  size_t pending() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return closed_.size();
  }

 private:
  struct Interval {
    cudaEvent_t start, stop;
  };
  cudaStream_t stream(DeviceStream s) const {
    return s == DeviceStream::comm ? cuda::comm_stream(device_) : cuda::compute_stream(device_);
  }
  cudaEvent_t take_event() {
    if (!free_.empty()) {
      cudaEvent_t e = free_.back();
      free_.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    DPLAB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDefault));  // timing on
    return e;
  }

  int device_;
  mutable std::mutex mu_;
  cudaEvent_t open_ = nullptr;
  std::deque<Interval> closed_;
  std::vector<cudaEvent_t> free_;
};

}  // namespace

std::unique_ptr<DeviceIntervals> make_device_intervals(Device device) {
  if (!device.is_cuda()) return nullptr;
  return std::make_unique<CudaIntervals>(device.index);
}

}  // namespace dplab
