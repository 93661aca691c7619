// Image decoding to 8-bit RGB. The decoder is chosen by the file's signature bytes, never by its
// name: JPEG through libjpeg-turbo (with DCT-domain downscaling when the caller needs far fewer
// pixels than the file holds), PNG through libpng, binary PNM (P5/P6, 8 or 16 bits) by the reader
// in decode_pnm.cpp, and only BMP, GIF and TGA (which no maintained library here reads) through
// stb_image, compiled with just those three decoders.
//
// Untrusted input: every decoder's header is read first and an image with more than
// `max_pixels` pixels is refused before any pixel buffer is allocated, so a few bytes claiming
// 65535 x 65535 cannot take gigabytes; data shorter than the header declares is an error, never
// a read past the buffer. One decode allocates at most max_decode_bytes(width, height) in all,
// the decoder libraries' own buffers included (libpng through a counting allocator, libjpeg
// through its memory manager's limit, stb_image through its allocation macros); a file whose
// data cannot hold what its header declares is refused before the pixels are allocated where
// that can be told from the file (PNG, PNM, BMP, TGA). Errors throw DecodeError naming the `what`
// context (shard and key, or file path) the caller passes, what was expected and what was found.
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

// Default bound on width x height (option data.max_image_pixels): 64 Mpixel (8192 x 8192, or a
// 50 Mpixel camera's 8688 x 5792) decodes to at most 192 MiB of RGB per loader thread; larger
// training images are almost always damage or decompression bombs.
constexpr int64_t kDefaultMaxImagePixels = int64_t(1) << 26;

// The memory bound of one decode of a width x height image (the size its header declares):
// 3 x its RGB size + 16 MiB, whatever the format, the scaling, or the damage: 592 MiB at
// 64 Mpixel. A decode that would need more is refused with a DecodeError saying so (a
// progressive 4:4:4 CMYK JPEG of more than 8 Mpixel decoded at full size, whose coefficients
// alone take 8 bytes a pixel; a 16-bit RGBA PNG more than a million pixels wide, for libpng's
// row buffers).
constexpr uint64_t kDecodeSlackBytes = uint64_t(16) << 20;
constexpr uint64_t max_decode_bytes(int64_t width, int64_t height) {
  if (width <= 0 || height <= 0 || width > INT32_MAX || height > INT32_MAX) return UINT64_MAX;
  const uint64_t pixels = uint64_t(width) * uint64_t(height);
  return pixels > (uint64_t(1) << 58) ? UINT64_MAX : 9 * pixels + kDecodeSlackBytes;
}

// Encoded images larger than this are refused (stb_image and the size checks take an int).
constexpr uint64_t kMaxEncodedImageBytes = 0x7fffffffu;

// Interleaved 8-bit RGB, row-major: pixel (y, x) channel c at rgb[(y * width + x) * 3 + c].
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;
};

enum class ImageFormat { jpeg, png, pnm, bmp, gif, tga };
const char* image_format_name(ImageFormat f);

struct ImageHeader {
  int width = 0, height = 0;
  ImageFormat format = ImageFormat::jpeg;
  bool jpeg = false;
  bool cmyk = false;  // JPEG in CMYK or YCCK
};

// Format and size of an encoded image without decoding the pixels; throws DecodeError for an
// unknown format, a damaged header, or more than `max_pixels` pixels.
ImageHeader read_image_header(const uint8_t* data, size_t size, const std::string& what,
                              int64_t max_pixels = kDefaultMaxImagePixels);

// Decodes to RGB (alpha dropped, greyscale and palettes expanded, 16-bit samples rounded to 8).
// For JPEG, `min_width` x `min_height` > 0 lets the decoder scale down in the DCT domain
// (tjGetScalingFactors): it picks the smallest scaled size that is still >= the requested size in
// both dimensions, never upscaling. Other formats decode at full size.
RgbImage decode_image(const uint8_t* data, size_t size, const std::string& what, int min_width = 0,
                      int min_height = 0, int64_t max_pixels = kDefaultMaxImagePixels);

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
