// How a CUDA device probe's result is read (pure logic, no CUDA: unit-tested on every machine).
//
// "No device" and "a broken driver" must not look alike (issue #19, item 11): a machine without
// a GPU, or without the NVIDIA driver installed at all, is a normal CI machine and CUDA tests
// skip there; a machine whose driver is installed but fails (too old for the runtime, not
// initialisable, ...) is a device machine gone wrong, and its CUDA tests must fail with the
// error text instead of reporting "skipped" (which ctest and CI show green).
#pragma once

namespace dplab {

enum class CudaProbeOutcome {
  available,  // the call succeeded and found at least one device
  no_device,  // no GPU, or no driver installed: a skip, with the reason
  broken,     // the driver is there but failed: a failure, with the error text
};

// `call_ok`: cudaGetDeviceCount returned cudaSuccess; `count`: what it reported;
// `error_means_no_device`: it failed with cudaErrorNoDevice (driver_types.h: "no CUDA-capable
// devices were detected by the installed CUDA driver") or cudaErrorStubLibrary (the toolkit's
// stub libcuda was loaded: no real driver); `driver_installed`: the driver library
// (libcuda.so.1) can be loaded. Without it the runtime reports cudaErrorInsufficientDriver,
// which on a machine that has a driver means "driver older than the runtime", a real failure.
CudaProbeOutcome classify_cuda_probe(bool call_ok, int count, bool error_means_no_device,
                                     bool driver_installed);

}  // namespace dplab
