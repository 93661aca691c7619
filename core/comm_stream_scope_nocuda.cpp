// CommStreamScope without the CUDA backend: one stream of work, the calling thread.
#include "dplab/core/comm_stream_scope.h"

namespace dplab {

struct StreamMark::Impl {};
StreamMark::StreamMark(Device, DeviceStream) {}
StreamMark::~StreamMark() = default;
void StreamMark::record() {}
void StreamMark::make_wait(DeviceStream) const {}

CommStreamScope::CommStreamScope(Device, const StreamMark*) {}
CommStreamScope::~CommStreamScope() = default;

}  // namespace dplab
