// Force-included (-include) by the per-ISA builds of dplab's CPU loops (core/CMakeLists.txt,
// core/cpu_isa.h): their kernel-table factories get the build's suffix (e.g.
// cpu_norm_kernels_x86_64_v4), the only names such a library exports (its version script hides
// the rest, inline functions of the headers included, so none of its AVX-512 code can stand in
// for the portable build's).
#pragma once
#define DPLAB_ISA_CAT2(a, b) a##b
#define DPLAB_ISA_CAT(a, b) DPLAB_ISA_CAT2(a, b)
#define cpu_elementwise_kernels DPLAB_ISA_CAT(cpu_elementwise_kernels_, DPLAB_CPU_VARIANT)
#define cpu_reduce_kernels DPLAB_ISA_CAT(cpu_reduce_kernels_, DPLAB_CPU_VARIANT)
#define cpu_norm_kernels DPLAB_ISA_CAT(cpu_norm_kernels_, DPLAB_CPU_VARIANT)
#define cpu_loss_kernels DPLAB_ISA_CAT(cpu_loss_kernels_, DPLAB_CPU_VARIANT)
#define cpu_random_kernels DPLAB_ISA_CAT(cpu_random_kernels_, DPLAB_CPU_VARIANT)
#define cpu_optim_kernels DPLAB_ISA_CAT(cpu_optim_kernels_, DPLAB_CPU_VARIANT)
