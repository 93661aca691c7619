// The cuDNN convolution algorithm cache and the 16-bit dtype combinations of the CUDA conv and
// gemm kernels (core/cuda/conv.cpp, gemm.cpp). Skipped, with the reason, without a device.
#include <gtest/gtest.h>

#include "common/cuda_gate.h"

#include <map>
#include <string>

#include "common/harness.h"
#include "dplab/core/backend.h"
#ifdef DPLAB_WITH_CUDA
#include "dplab/core/cuda/cudnn_handle.h"
#endif

namespace dplab {
namespace {

#define DPLAB_REQUIRE_CUDA() DPLAB_CUDA_TEST_GATE();

const Device kDev = Device::cuda(0);

// A grouped, dilated, strided, padded geometry no other test uses, so its cache key is new.
struct Case {
  Conv2dParams p;
  Shape x, w, y;
};
Case odd_case(int64_t n) {
  Case c;
  c.p.stride_h = 2;
  c.p.pad_h = 1;
  c.p.pad_w = 2;
  c.p.dilation_w = 2;
  c.p.groups = 3;
  const int64_t H = 9, W = 13, KH = 3, KW = 2;
  c.x = {n, 6, H, W};
  c.w = {9, 2, KH, KW};
  c.y = {n, 9, conv_out_size(H, KH, 2, 1, 1), conv_out_size(W, KW, 1, 2, 2)};
  return c;
}

#ifdef DPLAB_WITH_CUDA
TEST(CudaConvAlgoCache, FindsOncePerShapeThenReuses) {
  DPLAB_REQUIRE_CUDA();
  const Case c = odd_case(3);
  Tensor x = test::random_tensor(c.x, 11), w = test::random_tensor(c.w, 12);
  Tensor b = test::random_tensor({9}, 13), dy = test::random_tensor(c.y, 14);
  Tensor y_ref = Tensor::empty(c.y), dx_ref = Tensor::empty(c.x);
  Tensor dw_ref = Tensor::empty(c.w), db_ref = Tensor::empty({9});
  const Backend& ref = ref_backend();
  ref.conv.conv2d_forward(x, w, b, y_ref, c.p);
  ref.conv.conv2d_backward_data(dy, w, dx_ref, c.p);
  ref.conv.conv2d_backward_weight(x, dy, dw_ref, db_ref, c.p);

  const Backend& cu = cuda_backend();
  Tensor xd = x.to(kDev), wd = w.to(kDev), bd = b.to(kDev), dyd = dy.to(kDev);
  Tensor y1 = Tensor::empty(c.y, DType::f32, kDev), y2 = Tensor::empty(c.y, DType::f32, kDev);
  const cuda::ConvAlgoCacheStats s0 = cuda::conv_algo_cache_stats();
  cu.conv.conv2d_forward(xd, wd, bd, y1, c.p);
  const cuda::ConvAlgoCacheStats s1 = cuda::conv_algo_cache_stats();
  EXPECT_EQ(s1.finds, s0.finds + 1);
  EXPECT_EQ(s1.hits, s0.hits);
  cu.conv.conv2d_forward(xd, wd, bd, y2, c.p);
  const cuda::ConvAlgoCacheStats s2 = cuda::conv_algo_cache_stats();
  EXPECT_EQ(s2.finds, s1.finds);
  EXPECT_EQ(s2.hits, s1.hits + 1);
  // Deterministic algorithms only: the rerun gives the same bits.
  EXPECT_EQ(y1.to(Device::cpu()).to_vector(), y2.to(Device::cpu()).to_vector());
  test::expect_close(y1.to(Device::cpu()), y_ref, 1e-10, "forward");

  Tensor dx = Tensor::empty(c.x, DType::f32, kDev), dw = Tensor::empty(c.w, DType::f32, kDev);
  Tensor db = Tensor::empty({9}, DType::f32, kDev);
  cu.conv.conv2d_backward_data(dyd, wd, dx, c.p);
  cu.conv.conv2d_backward_weight(xd, dyd, dw, db, c.p);
  const cuda::ConvAlgoCacheStats s3 = cuda::conv_algo_cache_stats();
  EXPECT_EQ(s3.finds, s2.finds + 2);  // one key per direction
  test::expect_close(dx.to(Device::cpu()), dx_ref, 1e-10, "backward data");
  test::expect_close(dw.to(Device::cpu()), dw_ref, 1e-10, "backward weight");
  test::expect_close(db.to(Device::cpu()), db_ref, 1e-12, "backward bias");

  // Another batch size is another key.
  const Case c4 = odd_case(4);
  Tensor y4 = Tensor::empty(c4.y, DType::f32, kDev);
  cu.conv.conv2d_forward(test::random_tensor(c4.x, 15).to(kDev), wd, Tensor(), y4, c4.p);
  EXPECT_EQ(cuda::conv_algo_cache_stats().finds, s3.finds + 1);
}

// The report of the choices (core/conv_algo_log.h): one entry per direction for the odd shape,
// named by the layer's shape as written out by hand here, with cuDNN's algorithm names (never
// "?") and every call counted. Batch 5: a key no other test makes.
TEST(CudaConvAlgoCache, ReportsTheChosenAlgorithmPerShapeAndDirection) {
  DPLAB_REQUIRE_CUDA();
  const Case c = odd_case(5);
  const Backend& cu = cuda_backend();
  Tensor xd = test::random_tensor(c.x, 21).to(kDev), wd = test::random_tensor(c.w, 22).to(kDev);
  Tensor dyd = test::random_tensor(c.y, 23).to(kDev);
  Tensor y = Tensor::empty(c.y, DType::f32, kDev), dx = Tensor::empty(c.x, DType::f32, kDev);
  Tensor dw = Tensor::empty(c.w, DType::f32, kDev);
  for (int i = 0; i < 3; ++i) cu.conv.conv2d_forward(xd, wd, Tensor(), y, c.p);
  cu.conv.conv2d_backward_data(dyd, wd, dx, c.p);
  Tensor no_db;
  cu.conv.conv2d_backward_weight(xd, dyd, dw, no_db, c.p);
  const std::string shape = "f32 x[5,6,9,13] w[9,2,3,2] stride 2x1 pad 1x2 dilation 1x2 groups 3";
  std::map<std::string, ConvAlgoUse> got;
  for (const ConvAlgoUse& u : cuda::conv_algo_choices())
    if (u.shape == shape) got[u.direction] = u;
  ASSERT_EQ(got.size(), 3u) << "one entry per direction";
  EXPECT_EQ(got["forward"].calls, 3);
  EXPECT_EQ(got["backward_data"].calls, 1);
  EXPECT_EQ(got["backward_filter"].calls, 1);
  for (auto& [dir, u] : got) {
    EXPECT_NE(u.algorithm, "?") << dir;
    EXPECT_EQ(u.math.find("tensor_op"), std::string::npos) << dir << ": f32 never uses tensor ops";
  }
}

TEST(CudaConv16Bit, MatchesReferenceOnRoundedOperands) {
  DPLAB_REQUIRE_CUDA();
  const Case c = odd_case(2);
  for (DType t : {DType::bf16, DType::f16}) {
    // The reference on the 16-bit values (widened back to f32) is what the device computes up
    // to f32 accumulation order and the final rounding of y to 16 bits.
    Tensor x = test::random_tensor(c.x, 21).to(t), w = test::random_tensor(c.w, 22).to(t);
    Tensor b = test::random_tensor({9}, 23);
    Tensor y_ref = Tensor::empty(c.y);
    ref_backend().conv.conv2d_forward(x.to(DType::f32), w.to(DType::f32), b, y_ref, c.p);
    Tensor y = Tensor::empty(c.y, t, kDev);
    cuda_backend().conv.conv2d_forward(x.to(kDev), w.to(kDev), b.to(kDev), y, c.p);
    test::expect_close(y.to(Device::cpu()).to(DType::f32), y_ref, 1e-4,
                       std::string("forward ") + std::string(dtype_name(t)));
  }
}

// bf16 activations beside f32 master weights (autocast, Backend::bf16_activations): forward and
// backward data round the weights to bf16 themselves; backward weight writes an f32 dw from
// cuDNN's bf16 one. The reference computes on the same bf16 values in f32 (exact products) and
// writes dw in f32, so the device differs by f32 summation order, the rounding of y and dx to
// bf16 (nmse about 2^-18 each) and the one rounding of dw (the same): within 1e-4.
TEST(CudaConv16Bit, Bf16ActivationsTakeF32MasterWeights) {
  DPLAB_REQUIRE_CUDA();
  const Case c = odd_case(2);
  const Tensor x = test::random_tensor(c.x, 41).to(DType::bf16);
  const Tensor w = test::random_tensor(c.w, 42);  // f32
  const Tensor dy = test::random_tensor(c.y, 43).to(DType::bf16);
  const Tensor w16 = w.to(DType::bf16).to(DType::f32);  // the values the device multiplies
  Tensor y_ref = Tensor::empty(c.y), dx_ref = Tensor::empty(c.x), dw_ref = Tensor::empty(c.w);
  ref_backend().conv.conv2d_forward(x.to(DType::f32), w16, Tensor(), y_ref, c.p);
  ref_backend().conv.conv2d_backward_data(dy.to(DType::f32), w16, dx_ref, c.p);
  Tensor no_db;
  ref_backend().conv.conv2d_backward_weight(x.to(DType::f32), dy.to(DType::f32), dw_ref, no_db,
                                            c.p);
  Tensor y = Tensor::empty(c.y, DType::bf16, kDev), dx = Tensor::empty(c.x, DType::bf16, kDev);
  Tensor dw = Tensor::empty(c.w, DType::f32, kDev), db;
  cuda_backend().conv.conv2d_forward(x.to(kDev), w.to(kDev), Tensor(), y, c.p);
  cuda_backend().conv.conv2d_backward_data(dy.to(kDev), w.to(kDev), dx, c.p);
  cuda_backend().conv.conv2d_backward_weight(x.to(kDev), dy.to(kDev), dw, db, c.p);
  test::expect_close(y.to(Device::cpu()).to(DType::f32), y_ref, 1e-4, "y");
  test::expect_close(dx.to(Device::cpu()).to(DType::f32), dx_ref, 1e-4, "dx");
  test::expect_close(dw.to(Device::cpu()), dw_ref, 1e-4, "dw");
}

TEST(CudaConv16Bit, MixedOperandsThrowNamingTheCombination) {
  DPLAB_REQUIRE_CUDA();
  const Case c = odd_case(2);
  // f32 weights go with bf16 activations only (master weights); f16 takes one dtype throughout.
  Tensor x = test::random_tensor(c.x, 31).to(DType::f16).to(kDev);
  Tensor w = test::random_tensor(c.w, 32).to(kDev);  // f32
  Tensor y = Tensor::empty(c.y, DType::f16, kDev);
  try {
    cuda_backend().conv.conv2d_forward(x, w, Tensor(), y, c.p);
    FAIL() << "f16 x with f32 w must be refused";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("x f16, w f32, y f16"), std::string::npos) << msg;
  }
}

TEST(CudaGemm16Bit, AcceptedCombinationsMatchReference) {
  DPLAB_REQUIRE_CUDA();
  Tensor a = test::random_tensor({7, 5}, 41), b = test::random_tensor({6, 5}, 42);
  for (DType t : {DType::bf16, DType::f16}) {
    Tensor a16 = a.to(t), b16 = b.to(t);
    Tensor c_ref = Tensor::empty({7, 6});
    ref_backend().gemm.gemm(false, true, 1.0f, a16.to(DType::f32), b16.to(DType::f32), 0.0f, c_ref);
    for (DType ct : {t, DType::f32}) {
      Tensor c = Tensor::empty({7, 6}, ct, kDev);
      cuda_backend().gemm.gemm(false, true, 1.0f, a16.to(kDev), b16.to(kDev), 0.0f, c);
      test::expect_close(c.to(Device::cpu()).to(DType::f32), c_ref, ct == DType::f32 ? 1e-10 : 1e-4,
                         std::string(dtype_name(t)) + " -> " + std::string(dtype_name(ct)));
    }
  }
  // A 16-bit a with an f32 b is not a cuBLAS combination dplab accepts.
  Tensor c = Tensor::empty({7, 6}, DType::f32, kDev);
  try {
    cuda_backend().gemm.gemm(false, true, 1.0f, a.to(DType::bf16).to(kDev), b.to(kDev), 0.0f, c);
    FAIL() << "bf16 a with f32 b must be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a bf16, b f32, c f32"), std::string::npos) << e.what();
  }
}
#else
TEST(CudaConvAlgoCache, FindsOncePerShapeThenReuses) {
  DPLAB_CUDA_TEST_GATE();
  GTEST_SKIP() << cuda_unavailable_reason();  // not reached: no device without DPLAB_CUDA
}
#endif

}  // namespace
}  // namespace dplab
