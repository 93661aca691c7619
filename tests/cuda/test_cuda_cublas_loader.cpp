// cuBLAS is loaded on first use (core/cuda/cublas_api.h), so a CPU run never carries its
// ~210 MB: the library is not mapped until a CUDA product asks for it, then every entry point
// resolves. Needs the CUDA toolkit's libraries, not a device: this runs on CI machines too.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "dplab/core/cuda/cublas_api.h"
#include "dplab/core/device.h"

namespace dplab {
namespace {

bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::stringstream all;
  all << maps.rdbuf();
  return all.str().find("libcublas") != std::string::npos;
}

TEST(CublasLoader, LoadsOnFirstUseAndResolvesEveryEntryPoint) {
  // With a device, an earlier test may already have run a product; without one nothing has.
  if (!cuda_available()) {
    EXPECT_FALSE(cublas_mapped()) << "libcublas loaded before any use";
  }
  const cuda::CublasApi& api = cuda::cublas();
  EXPECT_TRUE(cublas_mapped());
  for (const void* fn :
       {reinterpret_cast<const void*>(api.create), reinterpret_cast<const void*>(api.set_stream),
        reinterpret_cast<const void*>(api.set_workspace),
        reinterpret_cast<const void*>(api.set_math_mode),
        reinterpret_cast<const void*>(api.set_pointer_mode),
        reinterpret_cast<const void*>(api.gemm_ex), reinterpret_cast<const void*>(api.status_name),
        reinterpret_cast<const void*>(api.status_string)})
    EXPECT_NE(fn, nullptr);
  // Callable without a device: the status names are the library's own.
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_SUCCESS), "CUBLAS_STATUS_SUCCESS");
  EXPECT_STREQ(api.status_name(CUBLAS_STATUS_INVALID_VALUE), "CUBLAS_STATUS_INVALID_VALUE");
  EXPECT_EQ(&cuda::cublas(), &api);  // loaded once
}

}  // namespace
}  // namespace dplab
