// BMP, GIF and TGA through stb_image: the formats no maintained Debian library here reads.
// stb_image is compiled with exactly these three decoders (STBI_ONLY_*): JPEG, PNG and PNM go to
// libjpeg-turbo, libpng and decode_pnm.cpp, and the rest (PSD, HDR, PIC) are not training-image
// formats, so their decoders are left out rather than exposed to untrusted files. The symbols are
// static (STB_IMAGE_STATIC): this file's copy is private to it.
#include "dplab/data/image_decoders.h"

#include <memory>

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#define STBI_ONLY_BMP
#define STBI_ONLY_GIF
#define STBI_ONLY_TGA
// Each side at most 65535 (TGA's and GIF's own limit); the pixel count is bounded separately.
#define STBI_MAX_DIMENSIONS 65535
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

namespace dplab::detail {
namespace {

ImageFormat format_of(const uint8_t* d, size_t size) {
  if (size >= 2 && d[0] == 'B' && d[1] == 'M') return ImageFormat::bmp;
  if (size >= 4 && d[0] == 'G' && d[1] == 'I' && d[2] == 'F' && d[3] == '8')
    return ImageFormat::gif;
  return ImageFormat::tga;  // no signature: stb_image's plausibility test decides
}

}  // namespace

ImageHeader stb_header(const uint8_t* data, size_t size, const std::string& what) {
  if (size > 0x7fffffffu)
    throw DecodeError(fmt::format("{}: image of {} bytes is too large (limit 2 GiB)", what, size));
  ImageHeader h;
  h.format = format_of(data, size);
  int comp = 0;
  if (!stbi_info_from_memory(data, int(size), &h.width, &h.height, &comp))
    throw DecodeError(fmt::format(
        "{}: not a JPEG, PNG, PNM, BMP, GIF or TGA image ({} bytes starting {:02x}; {} header: "
        "{})",
        what, size, fmt::join(data, data + std::min<size_t>(size, 8), " "),
        image_format_name(h.format), stbi_failure_reason()));
  return h;
}

RgbImage stb_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels) {
  const ImageHeader h = stb_header(data, size, what);
  check_image_size(h.width, h.height, max_pixels, h.format, what);
  int w = 0, hh = 0, comp = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pix(
      stbi_load_from_memory(data, int(size), &w, &hh, &comp, 3), stbi_image_free);
  if (!pix)
    throw DecodeError(fmt::format("{}: corrupt {} ({}x{}): {}", what, image_format_name(h.format),
                                  h.width, h.height, stbi_failure_reason()));
  if (w != h.width || hh != h.height)
    throw DecodeError(fmt::format("{}: {} header says {}x{}, the decoder produced {}x{}", what,
                                  image_format_name(h.format), h.width, h.height, w, hh));
  RgbImage img;
  img.width = w;
  img.height = hh;
  img.rgb.assign(pix.get(), pix.get() + size_t(w) * size_t(hh) * 3);
  return img;
}

}  // namespace dplab::detail
