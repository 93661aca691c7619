// Which algorithm the CPU convolutions may use. 3x3 stride-1 convolutions run oneDNN's Winograd
// F(4x4, 3x3) kernels by default (core/cpu/conv.cpp says why); DPLAB_CPU_WINOGRAD=0 in the
// environment keeps every convolution direct. set_cpu_winograd overrides the environment for the
// whole process from then on (like omp_set_num_threads: a process-wide setting, read when a
// primitive is chosen; primitives are cached per setting), so a test or a benchmark can compare
// the two algorithms in one process.
#pragma once

namespace dplab {

bool cpu_winograd_enabled();
void set_cpu_winograd(bool enabled);

}  // namespace dplab
