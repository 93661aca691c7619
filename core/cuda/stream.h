// The streams every CUDA kernel of dplab runs on. Each device has one compute stream (all op
// kernels, cuDNN and cuBLAS calls are issued on it, in program order, so ops need no host
// synchronisation between them) and one communication stream (NCCL collectives; ordered
// against compute with events, never with host waits). Both are created on first use,
// non-blocking with respect to the legacy default stream, and live until exit.
#pragma once
#include <cuda_runtime.h>

namespace dplab::cuda {

cudaStream_t compute_stream(int device);
cudaStream_t comm_stream(int device);

}  // namespace dplab::cuda
