// The element-wise arithmetic of DC-S3GD (Dcs3gdAverage, Dcs3gdNormTerms, Dcs3gdUpdate) lives in
// core/optim_functors.h beside the other optimizer updates, so the ref, OpenMP and CUDA kernels
// of core/kernels/optim.h all run it; this header keeps the algorithm's include working.
#pragma once
#include "dplab/core/optim_functors.h"
