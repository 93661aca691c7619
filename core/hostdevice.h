// DPLAB_HD marks functions both compilers read: the CPU kernels and the CUDA kernels call the
// same functor, so the device path runs the arithmetic the CPU tests already proved.
#pragma once
#if defined(__CUDACC__)
#define DPLAB_HD __host__ __device__ __forceinline__
#else
#define DPLAB_HD inline
#endif
