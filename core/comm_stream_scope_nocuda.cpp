// CommStreamScope without the CUDA backend: one stream of work, the calling thread.
#include "dplab/core/comm_stream_scope.h"

namespace dplab {

struct ComputeMark::Impl {};
ComputeMark::ComputeMark(Device) {}
ComputeMark::~ComputeMark() = default;
void ComputeMark::record() {}

CommStreamScope::CommStreamScope(Device, const ComputeMark*) {}
CommStreamScope::~CommStreamScope() = default;
void order_compute_after_comm(Device) {}

}  // namespace dplab
