// Crops, resizes, flips and normalisation against hand-computed values on tiny images.
#include <gtest/gtest.h>

#include <cmath>

#include "dplab/data/transforms.h"

namespace dplab {
namespace {

const Normalization kIdentity{{0, 0, 0}, {1.0f / 255, 1.0f / 255, 1.0f / 255}};  // out = v

RgbImage ramp(int w, int h) {
  // R = 10 * x + y, G = 100 + y, B = x.
  RgbImage img{w, h, std::vector<uint8_t>(size_t(w * h * 3))};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &img.rgb[size_t((y * w + x) * 3)];
      p[0] = uint8_t(10 * x + y);
      p[1] = uint8_t(100 + y);
      p[2] = uint8_t(x);
    }
  return img;
}

TEST(Transforms, IdentityCropAndFlip) {
  const RgbImage img = ramp(4, 3);
  std::vector<float> out(3 * 2 * 2);
  // Box (1,1) 2x2 at the same size: a plain copy of the crop.
  resample_to_chw(img, {1, 1, 2, 2}, 2, 2, false, kIdentity, out.data());
  EXPECT_EQ(out, (std::vector<float>{11, 21, 12, 22, 101, 101, 102, 102, 1, 2, 1, 2}));
  resample_to_chw(img, {1, 1, 2, 2}, 2, 2, true, kIdentity, out.data());
  EXPECT_EQ(out, (std::vector<float>{21, 11, 22, 12, 101, 101, 102, 102, 2, 1, 2, 1}));
}

TEST(Transforms, HalfPixelBilinearDownAndUp) {
  const RgbImage img = ramp(4, 2);
  // 4x2 -> 2x1: source x = 2 * ox + 0.5, y = 0.5: the mean of each 2x2 block.
  std::vector<float> out(3 * 2);
  resample_to_chw(img, {0, 0, 4, 2}, 2, 1, false, kIdentity, out.data());
  EXPECT_FLOAT_EQ(out[0], (0 + 1 + 10 + 11) / 4.0f);
  EXPECT_FLOAT_EQ(out[1], (20 + 21 + 30 + 31) / 4.0f);
  EXPECT_FLOAT_EQ(out[2], 100.5f);
  EXPECT_FLOAT_EQ(out[4], 0.5f);
  EXPECT_FLOAT_EQ(out[5], 2.5f);
  // 2x1 crop (x 1..2, row 0) -> 4x1: source x = 1 + (ox + 0.5) / 2 - 0.5, clamped to the crop
  // [1, 2]: 1, 1.25, 1.75, 2 -> R 10, 12.5, 17.5, 20.
  std::vector<float> up(3 * 4);
  resample_to_chw(img, {1, 0, 2, 1}, 4, 1, false, kIdentity, up.data());
  EXPECT_FLOAT_EQ(up[0], 10);
  EXPECT_FLOAT_EQ(up[1], 12.5f);
  EXPECT_FLOAT_EQ(up[2], 17.5f);
  EXPECT_FLOAT_EQ(up[3], 20);
}

TEST(Transforms, ImageNetNormalisation) {
  RgbImage img{1, 1, {255, 0, 128}};
  std::vector<float> out(3);
  resample_to_chw(img, {0, 0, 1, 1}, 1, 1, false, Normalization{}, out.data());
  EXPECT_NEAR(out[0], (1.0f - 0.485f) / 0.229f, 1e-5);
  EXPECT_NEAR(out[1], (0.0f - 0.456f) / 0.224f, 1e-5);
  EXPECT_NEAR(out[2], (128 / 255.0f - 0.406f) / 0.225f, 1e-5);
}

TEST(Transforms, RandomResizedCropFallbackAndRange) {
  PhiloxStream rng(1, 2);
  // Area fraction 1 with aspect 2 never fits a square: all 10 attempts fail, and the fallback
  // keeps the full width with height round(10 / 2) = 5, centred.
  RandomResizedCropParams p;
  p.scale_min = p.scale_max = 1.0;
  p.ratio_min = p.ratio_max = 2.0;
  CropBox b = random_resized_crop_box(10, 10, p, rng);
  EXPECT_EQ(b.x, 0);
  EXPECT_EQ(b.w, 10);
  EXPECT_EQ(b.h, 5);
  EXPECT_EQ(b.y, 2);  // (10 - 5) / 2
  // Tall image with the default ratio range: fallback clamps the aspect to 3/4.
  p = RandomResizedCropParams{};
  p.attempts = 0;
  b = random_resized_crop_box(30, 100, p, rng);
  EXPECT_EQ(b.w, 30);
  EXPECT_EQ(b.h, 40);
  EXPECT_EQ(b.y, 30);
  // Default parameters: boxes inside the image, areas within 8%..100%, ratios within 3/4..4/3
  // up to rounding; the same stream gives the same box.
  p = RandomResizedCropParams{};
  for (uint64_t s = 0; s < 200; ++s) {
    PhiloxStream r1(7, s), r2(7, s);
    const CropBox c = random_resized_crop_box(500, 375, p, r1);
    const CropBox d = random_resized_crop_box(500, 375, p, r2);
    EXPECT_EQ(c.x, d.x);
    EXPECT_EQ(c.w, d.h == c.h ? d.w : -1);
    ASSERT_GE(c.x, 0);
    ASSERT_GE(c.y, 0);
    ASSERT_LE(c.x + c.w, 500);
    ASSERT_LE(c.y + c.h, 375);
    const double frac = c.w * c.h / (500.0 * 375);
    if (c.w == 500 && c.h == 375) continue;  // fallback
    EXPECT_GT(frac, 0.075);
    EXPECT_LT(c.w / c.h, 4.0 / 3 + 0.02);
    EXPECT_GT(c.w / c.h, 3.0 / 4 - 0.02);
  }
}

TEST(Transforms, ResizeCenterCropBox) {
  // 500x375 -> Resize(256): 341x256 (int(256 * 500 / 375) = 341), CenterCrop(224): left
  // round(117 / 2) = 58 (half to even,
  // as Python's round), top round(32 / 2) = 16.
  const CropBox b = resize_center_crop_box(500, 375, 256, 224);
  const double s = 375.0 / 256;
  EXPECT_NEAR(b.y, 16 * s, 1e-9);
  EXPECT_NEAR(b.h, 224 * s, 1e-9);
  EXPECT_NEAR(b.w, 224 * 500.0 / 341, 1e-9);
  EXPECT_NEAR(b.x, 58 * 500.0 / 341, 1e-9);
}

}  // namespace
}  // namespace dplab
