// Every differentiable op of dplab, declared once. Each family's declarations live in
// core/ops/<family>.h; the kernels behind them in core/kernels/<family>.h, implemented three
// times (core/cpu/ref, core/cpu, core/cuda). An op records a backward Node when grad mode is on
// and an input requires grad.
#pragma once
#include "dplab/core/ops/conv.h"
#include "dplab/core/ops/elementwise.h"
#include "dplab/core/ops/linear.h"
#include "dplab/core/ops/loss.h"
#include "dplab/core/ops/norm.h"
#include "dplab/core/ops/pool.h"
#include "dplab/core/ops/random.h"
#include "dplab/core/ops/reduce.h"
#include "dplab/core/ops/shape.h"
