// Compiled with DPLAB_TRACE_COMPILED=0 (tests/core/CMakeLists.txt), as every file is in a
// -DDPLAB_TRACE=OFF build, together with the instrumented sources: that mode keeps compiling,
// and the instrumentation really is gone (a constant-null tracer, spans that record nothing).
// Compile check only: never linked.
#include "dplab/core/trace/tracer.h"

static_assert(!dplab::trace::kCompiled, "built without DPLAB_TRACE_COMPILED=0");

namespace dplab::trace {

// Everything the instrumented code uses, as it uses it.
bool compiled_out_probe(Tracer* t) {
  Span s(t, "forward", "compute", kCompute, true);
  s.without_step();
  s.arg("epoch", 1);
  s.end();
  BlockingComm c(t, "parameter average", "wait parameter average", 8);
  record_comm(t, "gossip exchange", "wait gossip exchange", Clock::now(), Clock::now(),
              Clock::now(), 8);
  return active(t) == nullptr;
}

}  // namespace dplab::trace
