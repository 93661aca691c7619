// A small f32 tensor's values brought to the host without making the host wait for the device
// at once (issue #34: the non-finite guard's flags, read a step later). start() enqueues the
// copy: on a CUDA device into a pinned buffer on the compute stream, followed by an event, so
// the host goes on; on the CPU the values are copied at once. take() returns the values of the
// last start(), waiting (bounded by comm.timeout_s, core/host_wait.h) only if the device has not
// reached the copy yet.
#pragma once
#include <memory>
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

class HostReadback {
 public:
  HostReadback();
  ~HostReadback();
  HostReadback(const HostReadback&) = delete;
  HostReadback& operator=(const HostReadback&) = delete;

  // `t`: f32 and contiguous, on any device. A start() not yet taken is dropped.
  void start(const Tensor& t);
  bool pending() const { return pending_; }
  // The values of the last start(); pending() is false afterwards. Throws if none is pending.
  std::vector<float> take();

 private:
  struct Device;  // the device side (CUDA: pinned buffer and event); null for the CPU
  std::unique_ptr<Device> device_;
  std::vector<float> host_;  // a CPU tensor's values, copied at start()
  size_t n_ = 0;
  bool pending_ = false;
  [[maybe_unused]] bool on_device_ = false;  // read by the CUDA build only
};

}  // namespace dplab
