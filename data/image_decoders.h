// The per-format decoders behind decode.h (internal to dplab_data). Each reads its header
// without allocating pixels, and each full decode re-checks the size against `max_pixels`
// before allocating, so calling one directly is as safe as going through decode_image.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "dplab/data/decode.h"

namespace dplab::detail {

// Throws DecodeError unless 0 < width, height and width * height <= max_pixels.
void check_image_size(int64_t width, int64_t height, int64_t max_pixels, ImageFormat format,
                      const std::string& what);
// The header of a `format` image of width x height, checked to be a possible size (each side
// fits an int); the limit on pixels is checked when decoding.
ImageHeader checked_header(int64_t width, int64_t height, ImageFormat format,
                           const std::string& what);

// JPEG through libjpeg, scaled by scale_num / scale_denom (one of tjGetScalingFactors') to
// out_width x out_height (TJSCALED of the header's size); `hdr` is jpeg_header's.
RgbImage jpeg_decode(const uint8_t* data, size_t size, const std::string& what,
                     const ImageHeader& hdr, int scale_num, int scale_denom, int out_width,
                     int out_height);

ImageHeader png_header(const uint8_t* data, size_t size, const std::string& what);
RgbImage png_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels);

// Binary PNM: P5 (greyscale) and P6 (RGB), maxval 1..65535.
bool is_pnm(const uint8_t* data, size_t size);
ImageHeader pnm_header(const uint8_t* data, size_t size, const std::string& what);
RgbImage pnm_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels);

// BMP, GIF (first frame) and TGA through stb_image.
ImageHeader stb_header(const uint8_t* data, size_t size, const std::string& what);
RgbImage stb_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels);

}  // namespace dplab::detail
