// Every NCCL call is checked; a failure throws dplab::Error naming the call (with its argument
// text), NCCL's error string, NCCL's last-error message (the library's own explanation, e.g.
// "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000") and `context` (which
// communicator and operation).
#pragma once
#include <nccl.h>

#include <string>

#include "dplab/core/error.h"

#define DPLAB_NCCL_CHECK_CTX(call, context)                                                       \
  do {                                                                                            \
    ncclResult_t dplab_nccl_rc_ = (call);                                                         \
    if (dplab_nccl_rc_ != ncclSuccess) {                                                          \
      const char* dplab_nccl_last_ = ncclGetLastError(nullptr);                                   \
      ::dplab::throw_error(                                                                       \
          __FILE__, __LINE__,                                                                     \
          ::fmt::format(                                                                          \
              "NCCL call {} failed: {} (last error: {}){}", #call,                                \
              ncclGetErrorString(dplab_nccl_rc_),                                                 \
              dplab_nccl_last_&&* dplab_nccl_last_ ? dplab_nccl_last_ : "none",                   \
              std::string(context).empty() ? std::string() : " [" + std::string(context) + "]")); \
    }                                                                                             \
  } while (0)

#define DPLAB_NCCL_CHECK(call) DPLAB_NCCL_CHECK_CTX(call, std::string())
