#include "dplab/data/decode.h"

#include <turbojpeg.h>

#include <memory>

// stb_image: this translation unit holds the implementation (Debian's libstb ships headers
// only). Only the decoders are needed, no stdio.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wuseless-cast"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#endif
#include <stb/stb_image.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

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

ImageHeader read_image_header(const uint8_t* data, size_t size, const std::string& what) {
  ImageHeader h;
  if (size > 0x7fffffffu)
    throw DecodeError(fmt::format("{}: image of {} bytes is too large", what, size));
  if (is_jpeg(data, size)) {
    // A fresh handle per image: one left in an error state by a corrupt file could misreport
    // the next (and creating one costs little next to a decode).
    TjHandle tj(false);
    int w = 0, hh = 0, subsamp = 0, cs = 0;
    if (tjDecompressHeader3(tj.h, data, static_cast<unsigned long>(size), &w, &hh, &subsamp, &cs) !=
        0)
      throw DecodeError(fmt::format("{}: bad JPEG header: {}", what, tjGetErrorStr2(tj.h)));
    h.width = w;
    h.height = hh;
    h.jpeg = true;
    h.cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
  } else {
    int comp;
    if (!stbi_info_from_memory(data, int(size), &h.width, &h.height, &comp))
      throw DecodeError(fmt::format("{}: not a JPEG and not an image stb_image can read ({})", what,
                                    stbi_failure_reason()));
  }
  // Corrupt headers can claim absurd sizes: refuse before allocating (256 Mpixel cap).
  if (h.width <= 0 || h.height <= 0 || int64_t(h.width) * h.height > (int64_t(1) << 28))
    throw DecodeError(fmt::format("{}: implausible image size {}x{}", what, h.width, h.height));
  return h;
}

RgbImage decode_with_stb(const uint8_t* data, size_t size, const std::string& what) {
  if (size > 0x7fffffffu)
    throw DecodeError(fmt::format("{}: image of {} bytes is too large", what, size));
  int w, h, comp;
  std::unique_ptr<stbi_uc, void (*)(void*)> pix(
      stbi_load_from_memory(data, int(size), &w, &h, &comp, 3), stbi_image_free);
  if (!pix)
    throw DecodeError(fmt::format("{}: cannot decode image: {}", what, stbi_failure_reason()));
  RgbImage img;
  img.width = w;
  img.height = h;
  img.rgb.assign(pix.get(), pix.get() + size_t(w) * size_t(h) * 3);
  return img;
}

RgbImage decode_image(const uint8_t* data, size_t size, const std::string& what, int min_width,
                      int min_height) {
  if (!is_jpeg(data, size)) return decode_with_stb(data, size, what);
  const ImageHeader hdr = read_image_header(data, size, what);
  TjHandle handle(false);
  tjhandle tj = handle.h;
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
          scaled(hdr.width, f) * scaled(hdr.height, f) <
              scaled(hdr.width, best) * scaled(hdr.height, best))
        best = f;
    }
  }
  RgbImage img;
  img.width = scaled(hdr.width, best);
  img.height = scaled(hdr.height, best);
  img.rgb.resize(size_t(img.width) * size_t(img.height) * 3);
  // libjpeg-turbo 2.1 cannot convert CMYK/YCCK to RGB: decode to (Adobe, inverted) CMYK and
  // convert here, R = C * K / 255 on the stored values (as stb_image does).
  std::vector<uint8_t> cmyk;
  if (hdr.cmyk) cmyk.resize(size_t(img.width) * size_t(img.height) * 4);
  uint8_t* dst = hdr.cmyk ? cmyk.data() : img.rgb.data();
  if (tjDecompress2(tj, data, static_cast<unsigned long>(size), dst, img.width, 0, img.height,
                    hdr.cmyk ? TJPF_CMYK : TJPF_RGB, TJFLAG_ACCURATEDCT) != 0) {
    // A warning (e.g. a truncated scan libjpeg-turbo padded with grey) is still a corrupt file
    // for training data: report it rather than train on half an image.
    throw DecodeError(fmt::format("{}: corrupt JPEG ({}x{}): {}", what, hdr.width, hdr.height,
                                  tjGetErrorStr2(tj)));
  }
  if (hdr.cmyk) {
    for (size_t p = 0, n = size_t(img.width) * size_t(img.height); p < n; ++p) {
      const unsigned k = cmyk[p * 4 + 3];
      for (size_t c = 0; c < 3; ++c)
        img.rgb[p * 3 + c] = uint8_t((cmyk[p * 4 + c] * k + 127) / 255);
    }
  }
  return img;
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
