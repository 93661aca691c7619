// Image decoding to 8-bit RGB: JPEG through libjpeg-turbo (with DCT-domain downscaling when the
// caller needs far fewer pixels than the file holds), every other format stb_image reads (PNG,
// BMP, GIF, TGA, PNM) through stb_image. Errors throw DecodeError naming the `what` context
// (shard and key, or file path) the caller passes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dplab/core/error.h"

namespace dplab {

class DecodeError : public Error {
 public:
  using Error::Error;
};

// Interleaved 8-bit RGB, row-major: pixel (y, x) channel c at rgb[(y * width + x) * 3 + c].
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

struct ImageHeader {
  int width = 0, height = 0;
  bool jpeg = false;
  bool cmyk = false;  // JPEG in CMYK or YCCK
};

// Size of an encoded image without decoding the pixels.
ImageHeader read_image_header(const uint8_t* data, size_t size, const std::string& what);

// Decodes to RGB. For JPEG, `min_width` x `min_height` > 0 lets the decoder scale down in the
// DCT domain (tjGetScalingFactors): it picks the smallest scaled size that is still >= the
// requested size in both dimensions, never upscaling. Other formats decode at full size.
RgbImage decode_image(const uint8_t* data, size_t size, const std::string& what, int min_width = 0,
                      int min_height = 0);

// The full-size decode through stb_image for any format it supports, JPEG included (the
// reference the tests compare libjpeg-turbo against).
RgbImage decode_with_stb(const uint8_t* data, size_t size, const std::string& what);

// JPEG encoding (tools and tests): `channels` 3 (RGB), 1 (greyscale) or 4 (CMYK input, written
// as an Adobe CMYK JPEG). `subsampling` is 444, 422, 420 or 0 for greyscale.
struct JpegEncodeOptions {
  int quality = 90;
  int subsampling = 420;
  bool progressive = false;
};
std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int width, int height, int channels,
                                 const JpegEncodeOptions& opt = {});

// True if the bytes start with the JPEG SOI marker.
bool is_jpeg(const uint8_t* data, size_t size);

}  // namespace dplab
