// One cuDNN handle per device, created on first use with that device current and bound to
// dplab::cuda::compute_stream(device), so every cuDNN call is ordered with the other kernels of
// the step. A handle is not safe for concurrent use from two host threads; dplab issues all
// compute (and so all cuDNN calls) of a device from the training thread.
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <vector>

#include "dplab/core/conv_algo_log.h"

namespace dplab::cuda {

cudnnHandle_t cudnn_handle(int device);

// The most workspace (bytes) a convolution algorithm may use; algorithms needing more are not
// chosen. DPLAB_CUDNN_WORKSPACE_MIB in the environment (read once) overrides the 256 MiB
// default. The workspace comes from the caching allocator, never from cudaMalloc per call.
size_t conv_workspace_limit();

// Counters of the per-shape convolution algorithm cache (it lives in core/cuda/conv.cpp):
// finds = cudnnFind*AlgorithmEx runs (one per new key), hits = calls that reused a choice,
// entries = keys held. For tests and diagnostics.
struct ConvAlgoCacheStats {
  size_t finds = 0, hits = 0, entries = 0;
};
ConvAlgoCacheStats conv_algo_cache_stats();

// The algorithms chosen so far, one entry per (direction, layer shape, algorithm), with the calls
// that ran each (core/conv_algo_log.h), in the order they were chosen.
std::vector<ConvAlgoUse> conv_algo_choices();

}  // namespace dplab::cuda
