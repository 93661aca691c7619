// One lazily created, never destroyed value per CUDA device (streams, library handles): created
// on first use under a once_flag, immutable afterwards, so concurrent readers need no lock.
// Never destroyed because destroying CUDA objects during static destruction races the driver's
// own teardown.
#pragma once
#include <array>
#include <mutex>

#include "dplab/core/error.h"

namespace dplab::cuda {

constexpr int kMaxDevices = 64;

template <typename T>
class PerDevice {
 public:
  // The value of `device`, made by make() (called with that device current) on first use.
  template <typename Make>
  const T& get(int device, const char* what, Make&& make) {
    DPLAB_CHECK(device >= 0 && device < kMaxDevices, "{}: CUDA device index {} out of [0, {})",
                what, device, kMaxDevices);
    Slot& s = slots_[device];
    std::call_once(s.once, [&] { s.value = make(); });
    return s.value;
  }

 private:
  struct Slot {
    std::once_flag once;
    T value{};
  };
  std::array<Slot, kMaxDevices> slots_;
};

}  // namespace dplab::cuda
