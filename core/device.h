// Where a tensor lives. Dispatch of every op is on the device of its inputs.
#pragma once
#include <string>
#include <string_view>

namespace dplab {

enum class DeviceKind : uint8_t { cpu, cuda };

struct Device {
  DeviceKind kind = DeviceKind::cpu;
  int index = 0;

  static Device cpu() { return {DeviceKind::cpu, 0}; }
  static Device cuda(int i = 0) { return {DeviceKind::cuda, i}; }
  bool is_cpu() const { return kind == DeviceKind::cpu; }
  bool is_cuda() const { return kind == DeviceKind::cuda; }
  bool operator==(const Device&) const = default;
  std::string str() const;
  // "cpu", "cuda", "cuda:1"; throws with the text on anything else.
  static Device parse(std::string_view s);
};

// True when dplab was built with DPLAB_CUDA and at least one device is visible.
bool cuda_available();
int cuda_device_count();
// Why CUDA is unavailable ("built without DPLAB_CUDA", "no CUDA device: ..."); empty if it is.
std::string cuda_unavailable_reason();
// True when the CUDA probe failed for another reason than "no device / no driver installed"
// (core/device_probe.h): a driver that is installed but broken. Tests fail on it, never skip.
bool cuda_probe_failed();

// Makes `d` the calling thread's current CUDA device (nothing to do for the CPU; throws naming
// the device and the reason when it cannot). Kernel wrappers switch to their tensors' device and
// back anyway, but switching back to a thread's default device 0 opens a CUDA context there
// (cudaSetDevice initialises the primary context since CUDA 12): hundreds of MiB on GPU 0 for
// every rank that trains on another GPU. So every thread that works for one device (the training
// thread, GradSync's communication thread, DC-S3GD's progress thread) calls this first.
void use_device(Device d);

}  // namespace dplab
