// Shape ops: views when contiguous, copies when not, gradients routed back to the input's
// layout.
#include <gtest/gtest.h>

#include "common/harness.h"

namespace dplab {
namespace {

using test::expect_gradients_match;
using test::random_tensor;

TEST(Shape, ReshapeIsAViewWhenContiguous) {
  Tensor x = Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor r = reshape(x, {3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 2}));
  EXPECT_EQ(r.storage(), x.storage());
  Tensor t = transpose(x, 0, 1);
  EXPECT_EQ(t.storage(), x.storage());
  EXPECT_FALSE(t.is_contiguous());
  Tensor rt = reshape(t, {6});  // non-contiguous: copied in transposed order
  EXPECT_NE(rt.storage(), x.storage());
  EXPECT_EQ(rt.to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(reshape(x, {4, -1}), Error);
  Tensor c = contiguous(t);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_TRUE(contiguous(x).is_same(x));
}

TEST(Shape, FlattenShapes) {
  Tensor x = Tensor::zeros({2, 3, 4, 5});
  EXPECT_EQ(flatten(x).shape(), (Shape{2, 60}));
  EXPECT_EQ(flatten(x, 0).shape(), (Shape{120}));
  EXPECT_EQ(flatten(x, 1, 2).shape(), (Shape{2, 12, 5}));
  EXPECT_EQ(flatten(x, -2, -1).shape(), (Shape{2, 3, 20}));
  EXPECT_THROW(flatten(x, 3, 1), Error);
  EXPECT_THROW(flatten(x, 4), Error);
}

TEST(Shape, Gradients) {
  Tensor x = random_tensor({2, 3, 4}, 1);
  x.set_requires_grad(true);
  expect_gradients_match(
      [](const std::vector<Tensor>& v) {
        return mul(reshape(v[0], {4, 6}), reshape(v[0], {4, 6}));
      },
      {x});
  expect_gradients_match([](const std::vector<Tensor>& v) { return square(flatten(v[0])); }, {x});
  expect_gradients_match(
      [](const std::vector<Tensor>& v) { return square(contiguous(transpose(v[0], 0, 2))); }, {x});
  // reshape of a non-contiguous intermediate
  expect_gradients_match(
      [](const std::vector<Tensor>& v) { return square(reshape(transpose(v[0], 1, 2), {-1})); },
      {x});
}

TEST(Shape, TransposeGradientLayout) {
  Tensor x = Tensor::from_vector({1, 2, 3, 4, 5, 6}, {2, 3});
  x.set_requires_grad(true);
  Tensor w = Tensor::from_vector({10, 20, 30, 40, 50, 60}, {3, 2});
  backward(sum(mul(transpose(x, 0, 1), w)));
  EXPECT_EQ(x.grad().shape(), (Shape{2, 3}));
  EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{10, 30, 50, 20, 40, 60}));
}

}  // namespace
}  // namespace dplab
