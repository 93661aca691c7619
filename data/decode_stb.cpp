// BMP, GIF and TGA through stb_image: the formats no maintained Debian library here reads.
// stb_image is compiled with exactly these three decoders (STBI_ONLY_*): JPEG, PNG and PNM go to
// libjpeg-turbo, libpng and decode_pnm.cpp, and the rest (PSD, HDR, PIC) are not training-image
// formats, so their decoders are left out rather than exposed to untrusted files. The symbols are
// static (STB_IMAGE_STATIC): this file's copy is private to it.
#include "dplab/data/image_decoders.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace {

// stb_image allocates through these (STBI_MALLOC, STBI_REALLOC, STBI_FREE), each block with a
// 16-byte header holding its size, counted against the bound of the decode in progress on this
// thread (decode.h, max_decode_bytes): a request past it fails, and stb_image reports "out of
// memory" (its "outofmem").
struct StbBudget {
  size_t used = 0, limit = 0, refused = 0;
};
thread_local StbBudget* t_budget = nullptr;
constexpr size_t kStbHeader = 16;

bool stb_take(size_t n) {
  StbBudget* b = t_budget;
  if (b == nullptr) return true;
  if (b->used > b->limit || n > b->limit - b->used) {
    b->refused = n;
    return false;
  }
  b->used += n;
  return true;
}

void stb_give(size_t n) {
  if (t_budget != nullptr) t_budget->used -= std::min(n, t_budget->used);
}

void* stb_malloc(size_t n) {
  if (n > SIZE_MAX - kStbHeader || !stb_take(n)) return nullptr;
  auto* p = static_cast<unsigned char*>(std::malloc(n + kStbHeader));
  if (p == nullptr) {
    stb_give(n);
    return nullptr;
  }
  std::memcpy(p, &n, sizeof n);
  return p + kStbHeader;
}

void stb_free(void* ptr) {
  if (ptr == nullptr) return;
  auto* p = static_cast<unsigned char*>(ptr) - kStbHeader;
  size_t n = 0;
  std::memcpy(&n, p, sizeof n);
  stb_give(n);
  std::free(p);
}

void* stb_realloc(void* ptr, size_t n) {
  if (ptr == nullptr) return stb_malloc(n);
  auto* p = static_cast<unsigned char*>(ptr) - kStbHeader;
  size_t old = 0;
  std::memcpy(&old, p, sizeof old);
  if (n > SIZE_MAX - kStbHeader || (n > old && !stb_take(n - old))) return nullptr;
  auto* q = static_cast<unsigned char*>(std::realloc(p, n + kStbHeader));
  if (q == nullptr) {
    if (n > old) stb_give(n - old);
    return nullptr;
  }
  if (n < old) stb_give(old - n);
  std::memcpy(q, &n, sizeof n);
  return q + kStbHeader;
}

// Counts stb_image's allocations on this thread against `limit` while it lives.
class StbBudgetScope {
 public:
  explicit StbBudgetScope(uint64_t limit) {
    budget_.limit = size_t(std::min<uint64_t>(limit, SIZE_MAX));
    t_budget = &budget_;
  }
  ~StbBudgetScope() { t_budget = nullptr; }
  StbBudgetScope(const StbBudgetScope&) = delete;
  StbBudgetScope& operator=(const StbBudgetScope&) = delete;
  const StbBudget& budget() const { return budget_; }

 private:
  StbBudget budget_;
};

}  // namespace

#define STBI_MALLOC(sz) stb_malloc(sz)
#define STBI_REALLOC(p, newsz) stb_realloc(p, newsz)
#define STBI_FREE(p) stb_free(p)

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
#if !defined(__clang__)  // GCC only
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif
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
  int comp = 0, width = 0, height = 0;
  StbBudgetScope budget(kDecodeSlackBytes);
  if (!stbi_info_from_memory(data, int(size), &width, &height, &comp))
    throw DecodeError(fmt::format(
        "{}: not a JPEG, PNG, PNM, BMP, GIF or TGA image ({} bytes starting {:02x}; {} header: "
        "{})",
        what, size, fmt::join(data, data + std::min<size_t>(size, 8), " "),
        image_format_name(h.format), stbi_failure_reason()));
  // A BMP's height is signed: negative for rows stored top-down (stb_image's info passes it
  // on as stored; its loader reads both orders). -2^31 has no positive value and stays
  // impossible.
  int64_t h64 = height;
  if (h.format == ImageFormat::bmp && height < 0) h64 = -h64;
  return checked_header(width, h64, h.format, what);
}

namespace {

uint32_t le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

// The bytes a BMP's raster takes, from the start of the file: |height| rows of width x bpp bits,
// each padded to 4 bytes but the last, from the pixel-data offset. stb_image reads zeros past
// the end of its input, so a file shorter than that would decode (to black) after allocating
// every pixel: it is refused before. 0 when the header is not one stb_image reads as raw rows.
uint64_t bmp_raster_end(const uint8_t* d, size_t size, const ImageHeader& h) {
  if (size < 30) return 0;
  const uint32_t hsz = le(d + 14, 4);
  const uint32_t bpp = le(d + (hsz == 12 ? 24 : 28), 2);
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) return 0;
  const uint64_t bits = uint64_t(h.width) * bpp;
  return uint64_t(le(d + 10, 4)) + (bits + 31) / 32 * 4 * uint64_t(h.height - 1) + (bits + 7) / 8;
}

// The fewest bytes a TGA of h's size can take, from the start of the file (stb_image's
// layout: the 18-byte header, the image ID, the colour map from its first-entry offset, then
// the pixels): every pixel stored, or for run-length data at most 128 pixels per packet of a
// count byte and one pixel. stb_image reads zeros past the end of its input, as for BMP.
uint64_t tga_min_end(const uint8_t* d, size_t size, const ImageHeader& h) {
  if (size < 18) return 0;
  const unsigned cmap_type = d[1], type = d[2], cmap_bits = d[7], bpp = d[16];
  const bool indexed = cmap_type != 0, rle = type >= 8;
  uint64_t start = 18 + uint64_t(d[0]);
  if (indexed) start += le(d + 3, 2) + uint64_t(le(d + 5, 2)) * ((cmap_bits + 7) / 8);
  const uint64_t pixel = indexed ? (bpp == 8 ? 1 : 2) : (bpp + 7) / 8;
  const uint64_t pixels = uint64_t(h.width) * uint64_t(h.height);
  return rle ? start + (pixels + 127) / 128 * (1 + pixel) : start + pixels * pixel;
}

}  // namespace

RgbImage stb_decode(const uint8_t* data, size_t size, const std::string& what, int64_t max_pixels) {
  const ImageHeader h = stb_header(data, size, what);
  check_image_size(h.width, h.height, max_pixels, h.format, what);
  if (h.format == ImageFormat::bmp) {
    const uint64_t end = bmp_raster_end(data, size, h);
    if (end > size)
      throw DecodeError(fmt::format(
          "{}: truncated BMP: the {}x{} raster of {}-bit pixels from byte {} ends at byte {}, the "
          "file has {} bytes; refused before decoding",
          what, h.width, h.height, le(data + (le(data + 14, 4) == 12 ? 24 : 28), 2),
          le(data + 10, 4), end, size));
  }
  if (h.format == ImageFormat::tga) {
    const uint64_t end = tga_min_end(data, size, h);
    if (end > size)
      throw DecodeError(fmt::format(
          "{}: truncated TGA: a {}x{} image of type {} with {}-bit pixels takes at least {} bytes, "
          "the file has {}; refused before decoding",
          what, h.width, h.height, data[2], data[16], end, size));
  }
  // GIF decodes to RGBA beside a background and a history buffer (9 bytes per pixel); asking
  // stb_image for RGB would add a converted copy while those live, so GIF is taken as RGBA and
  // converted here once they are freed. The others come as RGB.
  const int comp_wanted = h.format == ImageFormat::gif ? 4 : 3;
  int w = 0, hh = 0, comp = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> pix(nullptr, stbi_image_free);
  {
    StbBudgetScope budget(max_decode_bytes(h.width, h.height));
    pix.reset(stbi_load_from_memory(data, int(size), &w, &hh, &comp, comp_wanted));
    if (!pix && budget.budget().refused > 0)
      throw DecodeError(fmt::format(
          "{}: {} ({}x{}): stb_image asked for {} more bytes with {} in use; the limit for its "
          "size is {} bytes (3x its RGB size + 16 MiB)",
          what, image_format_name(h.format), h.width, h.height, budget.budget().refused,
          budget.budget().used, max_decode_bytes(h.width, h.height)));
  }
  if (!pix)
    throw DecodeError(fmt::format("{}: corrupt {} ({}x{}): {}", what, image_format_name(h.format),
                                  h.width, h.height, stbi_failure_reason()));
  if (w != h.width || hh != h.height)
    throw DecodeError(fmt::format("{}: {} header says {}x{}, the decoder produced {}x{}", what,
                                  image_format_name(h.format), h.width, h.height, w, hh));
  RgbImage img;
  img.width = w;
  img.height = hh;
  const size_t pixels = size_t(w) * size_t(hh);
  if (comp_wanted == 3) {
    img.rgb.assign(pix.get(), pix.get() + pixels * 3);
  } else {
    img.rgb.resize(pixels * 3);
    const stbi_uc* src = pix.get();
    for (size_t p = 0; p < pixels; ++p)
      for (size_t c = 0; c < 3; ++c) img.rgb[p * 3 + c] = src[p * 4 + c];
  }
  return img;
}

}  // namespace dplab::detail
