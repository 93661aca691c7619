// Image transforms of the ImageNet recipe, on decoded RGB images, producing f32 CHW tensors:
//   train: RandomResizedCrop(size, scale 0.08-1, ratio 3/4-4/3) + RandomHorizontalFlip(0.5)
//   eval:  Resize(shorter side = resize) + CenterCrop(size)
//   both:  ToTensor (/255) + Normalize(ImageNet mean/std).
// Every crop reduces to "resample a box of the source to size x size", done by one fused
// bilinear pass with half-pixel centres (align_corners=False, no antialiasing: torchvision's
// tensor path with antialias=False), sampling only inside the box (as cropping first does).
// Randomness comes from a PhiloxStream keyed by (seed, epoch, index) by the loader.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "dplab/core/philox.h"
#include "dplab/data/decode.h"

namespace dplab {

// A region of the source image in pixel units (integer for torchvision's crops).
struct CropBox {
  double x = 0, y = 0, w = 0, h = 0;
};

struct RandomResizedCropParams {
  double scale_min = 0.08, scale_max = 1.0;
  double ratio_min = 3.0 / 4.0, ratio_max = 4.0 / 3.0;
  int attempts = 10;
};

// torchvision's RandomResizedCrop.get_params: up to `attempts` draws of (area fraction
// uniform in scale, log aspect ratio uniform in log ratio); the first that fits is placed
// uniformly at random; otherwise the whole image clamped to the ratio range, centred.
CropBox random_resized_crop_box(int width, int height, const RandomResizedCropParams& p,
                                PhiloxStream& rng);
// Resize(shorter side -> `resize`, the longer scaled to int(resize * long / short)) followed by
// CenterCrop(size), expressed as a box of the original image.
CropBox resize_center_crop_box(int width, int height, int resize, int size);

struct Normalization {
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

// Resamples `box` of `img` (box in img's pixel units) to out_w x out_h, mirrored left-right
// if `flip`, and writes (v / 255 - mean) / std as CHW f32 to `out` [3, out_h, out_w].
void resample_to_chw(const RgbImage& img, const CropBox& box, int out_w, int out_h, bool flip,
                     const Normalization& norm, float* out);

struct ImageTransformOptions {
  int size = 224;     // output is [3, size, size]
  bool train = true;  // RandomResizedCrop + flip; false: Resize + CenterCrop
  int resize = 0;     // eval shorter side; 0: size * 256 / 224 (256 for 224)
  RandomResizedCropParams crop;
  float flip_p = 0.5f;
  Normalization norm;
  bool dct_scaling = true;                      // let JPEG decoding scale down in the DCT domain
  int64_t max_pixels = kDefaultMaxImagePixels;  // larger images are refused before decoding
};

// Decodes `data` and applies the transform; `what` names the sample in errors. `rng` is needed
// for train transforms. Throws DecodeError for undecodable input.
void decode_and_transform(const uint8_t* data, size_t size, const std::string& what,
                          const ImageTransformOptions& opt, PhiloxStream* rng, float* out);

}  // namespace dplab
