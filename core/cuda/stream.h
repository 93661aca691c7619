// The streams every CUDA kernel of dplab runs on. Each device has one compute stream (all op
// kernels, cuDNN and cuBLAS calls are issued on it, in program order, so ops need no host
// synchronisation between them) and one communication stream (NCCL collectives; ordered
// against compute with events, never with host waits). Both are created on first use,
// non-blocking with respect to the legacy default stream, and live until exit.
//
// A thread inside a CommStreamScope for a device (core/comm_stream_scope.h: GradSync's bucket
// reductions) launches dplab's own kernels, copies and allocations for that device on the comm
// stream instead: launch_stream() is where every launch site sends its work. cuBLAS and cuDNN,
// whose handles are bound to the compute stream, refuse to run inside such a scope.
#pragma once
#include <cuda_runtime.h>

namespace dplab::cuda {

cudaStream_t compute_stream(int device);
cudaStream_t comm_stream(int device);

// The stream this thread launches kernels, copies and allocations for `device` on: the comm
// stream inside a CommStreamScope for `device`, else the compute stream.
cudaStream_t launch_stream(int device);
bool in_comm_scope(int device);

// Throws when this thread is inside a CommStreamScope for `device`: `library`'s handle is bound
// to the compute stream, so its calls there would not be ordered with the scope's work.
void refuse_in_comm_scope(int device, const char* library);

// CommStreamScope's device side: the comm stream waits for `after` (an event recorded on the
// compute stream; null: for the compute stream's work so far), with no host wait, and this
// thread's launches for `device` go to it. Returns the thread's previous scope device (-1:
// none), for leave_comm_scope.
int enter_comm_scope(int device, cudaEvent_t after = nullptr);
void leave_comm_scope(int previous);

}  // namespace dplab::cuda
