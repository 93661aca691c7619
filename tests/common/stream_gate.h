// Holds a CUDA stream at a host function until release() (or destruction): work enqueued on it
// after the gate stays pending for as long as a test wants, deterministically. For the CUDA and
// NCCL tests (compiled only where CUDA is).
#pragma once
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace dplab::test {

class StreamGate {
 public:
  explicit StreamGate(cudaStream_t s) {
    EXPECT_EQ(cudaLaunchHostFunc(s, &StreamGate::hold, &open_), cudaSuccess);
  }
  ~StreamGate() { release(); }
  StreamGate(const StreamGate&) = delete;
  StreamGate& operator=(const StreamGate&) = delete;
  void release() { open_.store(true); }

 private:
  static void hold(void* p) {
    auto* open = static_cast<std::atomic<bool>*>(p);
    while (!open->load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::atomic<bool> open_{false};
};

}  // namespace dplab::test
