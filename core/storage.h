// Storage: one reference-counted block of memory on a device. Tensors are (storage, offset,
// shape, strides) views of it, so views into a ParamArena are free.
#pragma once
#include <cstddef>
#include <functional>
#include <memory>

#include "dplab/core/device.h"

namespace dplab {

// CPU host memory is 64-byte aligned (cache lines, AVX-512 loads, oneDNN's preference).
constexpr size_t kHostAlignment = 64;

class Storage {
 public:
  using Deleter = std::function<void(void*)>;
  Storage(void* data, size_t nbytes, Device device, Deleter deleter)
      : data_(data), nbytes_(nbytes), device_(device), deleter_(std::move(deleter)) {}
  ~Storage() {
    if (deleter_ && data_) deleter_(data_);
  }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Allocates nbytes on `device` (64-byte aligned host memory for the CPU; the CUDA caching
  // allocator for cuda:N). Contents are uninitialised.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);

 private:
  void* data_;
  size_t nbytes_;
  Device device_;
  Deleter deleter_;
};

// Host allocation helpers (aligned, throws std::bad_alloc on failure).
void* host_alloc(size_t nbytes);
void host_free(void* p);

}  // namespace dplab
