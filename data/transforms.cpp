#include "dplab/data/transforms.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dplab {

CropBox random_resized_crop_box(int width, int height, const RandomResizedCropParams& p,
                                PhiloxStream& rng) {
  const double area = double(width) * double(height);
  const double log_lo = std::log(p.ratio_min), log_hi = std::log(p.ratio_max);
  for (int attempt = 0; attempt < p.attempts; ++attempt) {
    const double target = area * (p.scale_min + (p.scale_max - p.scale_min) * rng.uniform());
    const double aspect = std::exp(log_lo + (log_hi - log_lo) * rng.uniform());
    const int w = int(std::nearbyint(std::sqrt(target * aspect)));
    const int h = int(std::nearbyint(std::sqrt(target / aspect)));
    if (w > 0 && w <= width && h > 0 && h <= height) {
      const int top = int(rng.below(uint64_t(height - h + 1)));
      const int left = int(rng.below(uint64_t(width - w + 1)));
      return {double(left), double(top), double(w), double(h)};
    }
  }
  // (Rounding: nearbyint = round half to even, as Python's round.)
  // Fallback: the whole image, cut down to the nearest allowed aspect ratio, centred.
  const double in_ratio = double(width) / double(height);
  int w = width, h = height;
  if (in_ratio < p.ratio_min) {
    h = int(std::nearbyint(double(w) / p.ratio_min));
  } else if (in_ratio > p.ratio_max) {
    w = int(std::nearbyint(double(h) * p.ratio_max));
  }
  return {double((width - w) / 2), double((height - h) / 2), double(w), double(h)};
}

CropBox resize_center_crop_box(int width, int height, int resize, int size) {
  DPLAB_CHECK(resize > 0 && size > 0 && size <= resize,
              "Resize({}) + CenterCrop({}): need 0 < size <= resize", resize, size);
  DPLAB_CHECK(width > 0 && height > 0, "Resize + CenterCrop of an empty {}x{} image", width,
              height);
  // Resized dimensions as torchvision computes them for an int size (64-bit: a 1 x 60000 image
  // resized to 256 wide is 15 million rows high).
  int64_t rw, rh;
  if (width <= height) {
    rw = resize;
    rh = int64_t(resize) * height / width;
  } else {
    rh = resize;
    rw = int64_t(resize) * width / height;
  }
  const double left = std::nearbyint(double(rw - size) / 2.0);
  const double top = std::nearbyint(double(rh - size) / 2.0);
  const double sx = double(width) / double(rw), sy = double(height) / double(rh);
  return {left * sx, top * sy, size * sx, size * sy};
}

namespace {

// Source sample positions of one axis: index pair and weight of the upper neighbour.
struct Tap {
  int lo, hi;
  float frac;
};

std::vector<Tap> axis_taps(double start, double len, int out, int src_len) {
  std::vector<Tap> taps(static_cast<size_t>(out));
  const double scale = len / out;
  // Only pixel centres inside the box are used (crop first, then resize), and only pixels that
  // exist: a box narrower than one pixel (the eval crop of a 1-pixel-high image covers rows
  // 0.06 to 0.94) holds no centre, and then the pixel nearest the box's middle is used.
  double first = std::ceil(start - 1e-9);
  double last = std::floor(start + len - 1 + 1e-9);
  const double top = double(src_len - 1);
  if (!(first <= last)) first = last = std::nearbyint(start + len / 2 - 0.5);
  first = std::clamp(first, 0.0, top);
  last = std::clamp(last, first, top);
  for (int o = 0; o < out; ++o) {
    double s = start + (o + 0.5) * scale - 0.5;
    s = std::clamp(s, first, last);
    const int lo = int(std::floor(s));
    const int hi = std::min(lo + 1, int(last));
    taps[size_t(o)] = {lo, hi, float(s - lo)};
  }
  return taps;
}

}  // namespace

void resample_to_chw(const RgbImage& img, const CropBox& box, int out_w, int out_h, bool flip,
                     const Normalization& norm, float* out) {
  DPLAB_CHECK(img.width > 0 && img.height > 0 && out_w > 0 && out_h > 0,
              "resample_to_chw: empty image {}x{} or output {}x{}", img.width, img.height, out_w,
              out_h);
  DPLAB_CHECK(img.rgb.size() == size_t(img.width) * size_t(img.height) * 3,
              "resample_to_chw: {}x{} image holds {} bytes, expected {}", img.width, img.height,
              img.rgb.size(), size_t(img.width) * size_t(img.height) * 3);
  DPLAB_CHECK(std::isfinite(box.x) && std::isfinite(box.y) && std::isfinite(box.w) &&
                  std::isfinite(box.h) && box.w > 0 && box.h > 0,
              "resample_to_chw: crop box ({}, {}, {}, {}) is empty or not finite", box.x, box.y,
              box.w, box.h);
  const std::vector<Tap> tx = axis_taps(box.x, box.w, out_w, img.width);
  const std::vector<Tap> ty = axis_taps(box.y, box.h, out_h, img.height);
  float scale[3], shift[3];
  for (int c = 0; c < 3; ++c) {
    scale[c] = 1.0f / (255.0f * norm.std[size_t(c)]);
    shift[c] = -norm.mean[size_t(c)] / norm.std[size_t(c)];
  }
  const size_t plane = size_t(out_w) * size_t(out_h);
  const size_t stride = size_t(img.width) * 3;
  for (int oy = 0; oy < out_h; ++oy) {
    const Tap& t = ty[size_t(oy)];
    const uint8_t* r0 = img.rgb.data() + size_t(t.lo) * stride;
    const uint8_t* r1 = img.rgb.data() + size_t(t.hi) * stride;
    const float fy = t.frac;
    for (int ox = 0; ox < out_w; ++ox) {
      const Tap& u = tx[size_t(flip ? out_w - 1 - ox : ox)];
      const size_t a = size_t(u.lo) * 3, b = size_t(u.hi) * 3;
      const float fx = u.frac;
      const size_t o = size_t(oy) * size_t(out_w) + size_t(ox);
      for (int c = 0; c < 3; ++c) {
        const float top =
            float(r0[a + size_t(c)]) + fx * float(r0[b + size_t(c)] - r0[a + size_t(c)]);
        const float bot =
            float(r1[a + size_t(c)]) + fx * float(r1[b + size_t(c)] - r1[a + size_t(c)]);
        const float v = top + fy * (bot - top);
        out[size_t(c) * plane + o] = v * scale[c] + shift[c];
      }
    }
  }
}

void decode_and_transform(const uint8_t* data, size_t size, const std::string& what,
                          const ImageTransformOptions& opt, PhiloxStream* rng, float* out) {
  const ImageHeader hdr = read_image_header(data, size, what, opt.max_pixels);
  CropBox box;
  bool flip = false;
  if (opt.train) {
    DPLAB_CHECK(rng != nullptr, "{}: a train transform needs a random stream", what);
    box = random_resized_crop_box(hdr.width, hdr.height, opt.crop, *rng);
    flip = rng->uniform() < opt.flip_p;
  } else {
    box = resize_center_crop_box(hdr.width, hdr.height,
                                 opt.resize > 0 ? opt.resize : opt.size * 256 / 224, opt.size);
  }
  // DCT scaling: the decoded image only needs the box to keep >= size pixels per side.
  int min_w = 0, min_h = 0;
  // (At most the full size: a box of a fraction of a pixel asks for more than the file has.)
  if (opt.dct_scaling && hdr.jpeg) {
    min_w =
        int(std::min(double(hdr.width), std::ceil(double(opt.size) * hdr.width / box.w - 1e-9)));
    min_h =
        int(std::min(double(hdr.height), std::ceil(double(opt.size) * hdr.height / box.h - 1e-9)));
  }
  const RgbImage img = decode_image(data, size, what, min_w, min_h, opt.max_pixels);
  if (img.width != hdr.width || img.height != hdr.height) {
    const double sx = double(img.width) / hdr.width, sy = double(img.height) / hdr.height;
    box = {box.x * sx, box.y * sy, box.w * sx, box.h * sy};
  }
  resample_to_chw(img, box, opt.size, opt.size, flip, opt.norm, out);
}

}  // namespace dplab
