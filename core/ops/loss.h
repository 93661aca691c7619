// (loss ops: declared by the family's owner.)
#pragma once
#include "dplab/core/tensor.h"

namespace dplab {}  // namespace dplab
