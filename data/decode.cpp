#include "dplab/data/decode.h"

#include <turbojpeg.h>

#include <climits>
#include <cstring>
#include <memory>

#include "dplab/data/image_decoders.h"

namespace dplab {
namespace {

struct TjHandle {
  tjhandle h;
  explicit TjHandle(bool compress) : h(compress ? tjInitCompress() : tjInitDecompress()) {
    DPLAB_CHECK(h != nullptr, "libjpeg-turbo: cannot create a handle: {}", tjGetErrorStr2(nullptr));
  }
  ~TjHandle() { tjDestroy(h); }
  TjHandle(const TjHandle&) = delete;
  TjHandle& operator=(const TjHandle&) = delete;
};

int scaled(int dim, const tjscalingfactor& f) {
  return TJSCALED(dim, f);
}

}  // namespace

bool is_jpeg(const uint8_t* data, size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::jpeg:
      return "JPEG";
    case ImageFormat::png:
      return "PNG";
    case ImageFormat::pnm:
      return "PNM";
    case ImageFormat::bmp:
      return "BMP";
    case ImageFormat::gif:
      return "GIF";
    case ImageFormat::tga:
      return "TGA";
  }
  return "image";
}

namespace detail {

void check_image_size(int64_t width, int64_t height, int64_t max_pixels, ImageFormat format,
                      const std::string& what) {
  if (width <= 0 || height <= 0 || width > INT_MAX || height > INT_MAX)
    throw DecodeError(fmt::format("{}: {} header gives an impossible size {}x{}", what,
                                  image_format_name(format), width, height));
  if (width * height > max_pixels)
    throw DecodeError(
        fmt::format("{}: {} image of {}x{} = {} pixels exceeds the limit of {} (option "
                    "data.max_image_pixels); refused before decoding",
                    what, image_format_name(format), width, height, width * height, max_pixels));
}

ImageHeader checked_header(int64_t width, int64_t height, ImageFormat format,
                           const std::string& what) {
  check_image_size(width, height, INT64_MAX, format, what);
  ImageHeader h;
  h.format = format;
  h.width = int(width);
  h.height = int(height);
  return h;
}

}  // namespace detail

namespace {

constexpr uint8_t kPngSignature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};

bool is_png(const uint8_t* data, size_t size) {
  return size >= 8 && std::memcmp(data, kPngSignature, 8) == 0;
}

ImageHeader jpeg_header(const uint8_t* data, size_t size, const std::string& what) {
  // A fresh handle per image: one left in an error state by a corrupt file could misreport
  // the next (and creating one costs little next to a decode).
  TjHandle tj(false);
  int w = 0, hh = 0, subsamp = 0, cs = 0;
  if (tjDecompressHeader3(tj.h, data, static_cast<unsigned long>(size), &w, &hh, &subsamp, &cs) !=
      0)
    throw DecodeError(fmt::format("{}: bad JPEG header: {}", what, tjGetErrorStr2(tj.h)));
  ImageHeader h;
  h.width = w;
  h.height = hh;
  h.format = ImageFormat::jpeg;
  h.jpeg = true;
  h.cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
  return h;
}

}  // namespace

ImageHeader read_image_header(const uint8_t* data, size_t size, const std::string& what,
                              int64_t max_pixels) {
  if (size > 0x7fffffffu)
    throw DecodeError(fmt::format("{}: image of {} bytes is too large (limit 2 GiB)", what, size));
  if (size == 0) throw DecodeError(fmt::format("{}: empty file, not an image", what));
  ImageHeader h;
  if (is_jpeg(data, size))
    h = jpeg_header(data, size, what);
  else if (is_png(data, size))
    h = detail::png_header(data, size, what);
  else if (detail::is_pnm(data, size))
    h = detail::pnm_header(data, size, what);
  else
    h = detail::stb_header(data, size, what);
  // Corrupt headers can claim absurd sizes: refuse before anything is allocated.
  detail::check_image_size(h.width, h.height, max_pixels, h.format, what);
  return h;
}

RgbImage decode_image(const uint8_t* data, size_t size, const std::string& what, int min_width,
                      int min_height, int64_t max_pixels) {
  const ImageHeader hdr = read_image_header(data, size, what, max_pixels);
  switch (hdr.format) {
    case ImageFormat::jpeg:
      break;
    case ImageFormat::png:
      return detail::png_decode(data, size, what, max_pixels);
    case ImageFormat::pnm:
      return detail::pnm_decode(data, size, what, max_pixels);
    case ImageFormat::bmp:
    case ImageFormat::gif:
    case ImageFormat::tga:
      return detail::stb_decode(data, size, what, max_pixels);
  }
  // The smallest scale-down whose output still covers the requested size (factors come
  // largest first, 2/1 down to 1/8; only those <= 1 are considered).
  int n = 0;
  const tjscalingfactor* factors = tjGetScalingFactors(&n);
  tjscalingfactor best{1, 1};
  if (factors != nullptr && (min_width > 0 || min_height > 0)) {
    for (int i = 0; i < n; ++i) {
      const tjscalingfactor f = factors[i];
      if (f.num > f.denom) continue;
      if (scaled(hdr.width, f) >= min_width && scaled(hdr.height, f) >= min_height &&
          int64_t(scaled(hdr.width, f)) * scaled(hdr.height, f) <
              int64_t(scaled(hdr.width, best)) * scaled(hdr.height, best))
        best = f;
    }
  }
  return detail::jpeg_decode(data, size, what, hdr, best.num, best.denom, scaled(hdr.width, best),
                             scaled(hdr.height, best));
}

std::vector<uint8_t> encode_jpeg(const uint8_t* pixels, int width, int height, int channels,
                                 const JpegEncodeOptions& opt) {
  DPLAB_CHECK(channels == 1 || channels == 3 || channels == 4,
              "encode_jpeg: channels must be 1, 3 or 4, got {}", channels);
  int pf = channels == 1 ? TJPF_GRAY : channels == 3 ? TJPF_RGB : TJPF_CMYK;
  int ss;
  if (channels == 1) {
    ss = TJSAMP_GRAY;
  } else {
    switch (opt.subsampling) {
      case 444:
        ss = TJSAMP_444;
        break;
      case 422:
        ss = TJSAMP_422;
        break;
      case 420:
        ss = TJSAMP_420;
        break;
      default:
        DPLAB_FAIL("encode_jpeg: subsampling must be 444, 422 or 420, got {}", opt.subsampling);
    }
  }
  TjHandle tj(true);
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  int flags = TJFLAG_ACCURATEDCT | (opt.progressive ? TJFLAG_PROGRESSIVE : 0);
  if (tjCompress2(tj.h, pixels, width, 0, height, pf, &buf, &len, ss, opt.quality, flags) != 0) {
    std::string msg = tjGetErrorStr2(tj.h);
    tjFree(buf);
    DPLAB_FAIL("encode_jpeg {}x{}x{}: {}", width, height, channels, msg);
  }
  std::vector<uint8_t> out(buf, buf + len);
  tjFree(buf);
  return out;
}

}  // namespace dplab
