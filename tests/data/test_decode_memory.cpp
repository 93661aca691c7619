// Issue #38: the peak memory of one decode, measured, against the bound decode.h states
// (max_decode_bytes: 3x the RGB size of the declared pixels + 16 MiB), on files written here:
// PNGs with a chunk claiming 2 GiB, too little IDAT data for their size, or rows too wide for
// libpng's row buffers; progressive JPEGs whose frame header declares 8000 x 8000 over the scans
// of a 16 x 16 image (RGB and CMYK) and a valid one of 4 Mpixel; and GIF, BMP and PNM files
// declaring far more pixels than they hold.
//
// How it is measured: this executable replaces malloc, calloc, realloc, free and the aligned
// allocators (glibc lets a program define them; every library it loads, libpng, libjpeg, zlib,
// libstdc++'s operator new, then allocates through them) with glibc's own __libc_* functions
// plus a count of the bytes live (malloc_usable_size) and their peak. The count is exact and
// deterministic: no sampling, no page residency, nothing that depends on the CPU or the load.
// Sanitizer builds replace malloc themselves: there the tests are skipped.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "data/image_bytes.h"
#include "dplab/data/decode.h"
#include "dplab/data/transforms.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DPLAB_COUNTING_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define DPLAB_COUNTING_MALLOC 0
#endif
#endif
#ifndef DPLAB_COUNTING_MALLOC
#define DPLAB_COUNTING_MALLOC 1
#endif

namespace {

std::atomic<int64_t> g_live{0}, g_peak{0};

#if DPLAB_COUNTING_MALLOC
void counted(void* p) {
  if (p == nullptr) return;
  const int64_t live = g_live += int64_t(malloc_usable_size(p));
  int64_t peak = g_peak.load(std::memory_order_relaxed);
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}
void uncounted(void* p) {
  if (p != nullptr) g_live -= int64_t(malloc_usable_size(p));
}
#endif

}  // namespace

#if DPLAB_COUNTING_MALLOC
extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void __libc_free(void*);
void* __libc_memalign(size_t, size_t);

void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  counted(p);
  return p;
}
void* calloc(size_t n, size_t size) {
  void* p = __libc_calloc(n, size);
  counted(p);
  return p;
}
void free(void* p) {
  uncounted(p);
  __libc_free(p);
}
void* realloc(void* p, size_t n) {
  if (p == nullptr) return malloc(n);
  const int64_t before = int64_t(malloc_usable_size(p));
  void* q = __libc_realloc(p, n);
  if (q != nullptr || n == 0) {
    g_live -= before;
    counted(q);
  }
  return q;
}
void* memalign(size_t align, size_t n) {
  void* p = __libc_memalign(align, n);
  counted(p);
  return p;
}
void* aligned_alloc(size_t align, size_t n) {
  return memalign(align, n);
}
int posix_memalign(void** out, size_t align, size_t n) {
  void* p = memalign(align, n);
  if (p == nullptr) return 12;  // ENOMEM
  *out = p;
  return 0;
}
void* valloc(size_t n) {
  return memalign(4096, n);
}
void* pvalloc(size_t n) {
  return memalign(4096, (n + 4095) / 4096 * 4096);
}
}  // extern "C"
#endif

namespace dplab {
namespace {

using test::Bytes;

struct Peak {
  int64_t bytes = 0;  // the most live at once above what was live at the start
  std::string error;  // the DecodeError, "" when it decoded
  int width = 0, height = 0;
};

// Decodes (full size, or through the training transform at 224 when `transform`) and reports
// the peak of heap bytes above the start.
Peak measure(const Bytes& file, bool transform = false) {
  Peak r;
  std::vector<float> out(transform ? size_t(3) * 224 * 224 : 0);
  const int64_t start = g_live.load();
  g_peak = start;
  try {
    if (transform) {
      ImageTransformOptions o;
      o.train = false;
      o.size = 224;
      decode_and_transform(file.data(), file.size(), "m", o, nullptr, out.data());
    } else {
      const RgbImage img = decode_image(file.data(), file.size(), "m");
      r.width = img.width;
      r.height = img.height;
    }
  } catch (const DecodeError& e) {
    r.error = e.what();
  }
  r.bytes = g_peak.load() - start;
  return r;
}

#define SKIP_WITHOUT_COUNTING() \
  if (!DPLAB_COUNTING_MALLOC)   \
  GTEST_SKIP() << "a sanitizer replaces malloc in this build: nothing to count with"

constexpr double kMiB = 1 << 20;

#define EXPECT_WITHIN_BOUND(peak, w, h)                                                    \
  EXPECT_LE(uint64_t((peak).bytes), max_decode_bytes(w, h))                                \
      << "peak " << (peak).bytes / kMiB << " MiB, bound " << max_decode_bytes(w, h) / kMiB \
      << " MiB; " << (peak).error

TEST(DecodeMemory, TheCounterSeesLibraryAllocations) {
  SKIP_WITHOUT_COUNTING();
  // A 1024x1024 PNG decodes to 3 MiB of RGB: the count must see at least that, and libpng's
  // allocations (through malloc) with it.
  const Bytes png =
      test::make_png8(1024, 1024, 0, Bytes(size_t(1024) * 1024, 77));  // greyscale, flat
  const Peak p = measure(png);
  ASSERT_EQ(p.error, "");
  EXPECT_GE(p.bytes, 3 << 20);
  EXPECT_WITHIN_BOUND(p, 1024, 1024);
}

TEST(DecodeMemory, PngChunkClaiming2GiBTakesNoMemory) {
  SKIP_WITHOUT_COUNTING();
  // Issue #38's 44-byte PNG: a tEXt chunk claiming 0x7ffffff0 bytes (it took 2 GiB and 4-27 s).
  Bytes png = test::png_signature();
  test::png_chunk(png, "IHDR", test::png_ihdr(16, 16, 8, 2));
  test::put_be32(png, 0x7ffffff0u);
  png.insert(png.end(), {'t', 'E', 'X', 't', 'a', 'b', 'c'});
  ASSERT_EQ(png.size(), 44u);
  const Peak p = measure(png);
  EXPECT_NE(p.error.find("chunk 'tEXt' at byte 33"), std::string::npos) << p.error;
  EXPECT_LE(p.bytes, 1 << 20) << p.bytes;
  // And read whole, the chunks of a file at the 8 MiB cap are skipped, never held.
  Bytes text(size_t(8) << 20, 't');
  std::memcpy(text.data(), "Comment\0", 8);
  const Bytes annotated = test::make_png8(64, 64, 2, Bytes(64 * 64 * 3, 5), false, {},
                                          {{"tEXt", text}, {"zTXt", text}});
  const Peak q = measure(annotated);
  EXPECT_EQ(q.error, "");
  EXPECT_LE(q.bytes, 1 << 20) << q.bytes;
}

TEST(DecodeMemory, PngDeclaringMorePixelsThanItsDataHoldsStaysBounded) {
  SKIP_WITHOUT_COUNTING();
  // Issue #38's 1 x 67,108,864 PNG (it peaked at 721 MB: 192 MiB of pixels and a 512 MiB
  // row-pointer array): refused from its IDAT size before anything is allocated.
  Bytes tall = test::png_signature();
  test::png_chunk(tall, "IHDR", test::png_ihdr(1, 67108864, 8, 0));
  test::png_chunk(tall, "IDAT", test::zlib_compress(Bytes(8, 0)));
  test::png_chunk(tall, "IEND", {});
  Peak p = measure(tall);
  EXPECT_NE(p.error.find("refused before decoding"), std::string::npos) << p.error;
  EXPECT_LE(p.bytes, 1 << 20);
  // 1 x 16,777,216 with enough IDAT data for deflate's ratio (rows of zeros): decoded row by
  // row, within the bound (48 MiB of pixels and libpng's two row buffers; a pointer per row
  // would add 128 MiB, over the 160 MiB bound).
  const uint32_t rows = uint32_t(1) << 24;
  Bytes zeros = test::png_signature();
  test::png_chunk(zeros, "IHDR", test::png_ihdr(1, rows, 8, 0));
  test::png_chunk(zeros, "IDAT", test::zlib_compress(Bytes(size_t(2) * rows, 0), 1));
  test::png_chunk(zeros, "IEND", {});
  p = measure(zeros);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.height, int(rows));
  EXPECT_WITHIN_BOUND(p, 1, rows);
  // Rows 4 Mpixel wide of 16-bit RGBA: libpng's two row buffers (8 bytes a pixel each) need
  // 64 MiB, over the 40 MiB the bound leaves it beside the 12 MiB of pixels: refused by the
  // counting allocator, within the bound.
  const uint32_t wide = uint32_t(1) << 22;
  Bytes rgba16 = test::png_signature();
  test::png_chunk(rgba16, "IHDR", test::png_ihdr(wide, 1, 16, 6));
  test::png_chunk(rgba16, "IDAT", test::zlib_compress(Bytes(size_t(wide) * 8 + 1, 0), 1));
  test::png_chunk(rgba16, "IEND", {});
  p = measure(rgba16);
  EXPECT_NE(p.error.find("libpng asked for"), std::string::npos) << p.error;
  EXPECT_NE(p.error.find("the limit for a 4194304x1 image is"), std::string::npos) << p.error;
  EXPECT_WITHIN_BOUND(p, wide, 1);
}

// A progressive JPEG of a 16 x 16 image whose frame header then declares w x h.
Bytes declared_jpeg(int channels, int subsampling, uint16_t w, uint16_t h) {
  Bytes px(size_t(16) * 16 * size_t(channels));
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t(i * 13);
  Bytes jpg = encode_jpeg(px.data(), 16, 16, channels, {90, subsampling, true});
  test::patch_jpeg_size(jpg, w, h);
  return jpg;
}

TEST(DecodeMemory, ProgressiveJpegDeclaring8000SquaredStaysBounded) {
  SKIP_WITHOUT_COUNTING();
  // libjpeg keeps every coefficient of a progressive file: 2 bytes per sample, 366 MiB at
  // 8000 x 8000 in 4:4:4, allocated before the scans are read. With the pixels (183 MiB) that
  // is 549 MiB, inside the 565 MiB bound; the warning at the end of the data stops the decode
  // before the pixels are allocated.
  for (int subsampling : {444, 420}) {
    SCOPED_TRACE(subsampling);
    const Bytes jpg = declared_jpeg(3, subsampling, 8000, 8000);
    ASSERT_LT(jpg.size(), 3000u);
    const Peak p = measure(jpg);
    EXPECT_NE(p.error.find("corrupt JPEG (8000x8000)"), std::string::npos) << p.error;
    EXPECT_WITHIN_BOUND(p, 8000, 8000);
    const Peak t = measure(jpg, true);  // the training path: DCT-scaled, same coefficients
    EXPECT_NE(t.error.find("corrupt JPEG (8000x8000)"), std::string::npos) << t.error;
    EXPECT_WITHIN_BOUND(t, 8000, 8000);
  }
  // CMYK 4:4:4 keeps 8 bytes a pixel: at 4000 x 4000, 122 MiB beside 46 MiB of pixels, over
  // the 153 MiB bound: refused by libjpeg's memory limit before anything large is allocated.
  const Bytes cmyk = declared_jpeg(4, 444, 4000, 4000);
  const Peak p = measure(cmyk);
  EXPECT_NE(p.error.find("needs more memory than the limit for its size"), std::string::npos)
      << p.error;
  EXPECT_LE(p.bytes, 4 << 20);
  // A valid progressive 4:4:4 JPEG of 2048 x 2048 decodes inside the bound, at full size and
  // scaled.
  Bytes px(size_t(2048) * 2048 * 3);
  for (size_t i = 0; i < px.size(); ++i) px[i] = uint8_t((i / 3 % 2048) / 8 + (i % 3) * 40);
  const Bytes valid = encode_jpeg(px.data(), 2048, 2048, 3, {90, 444, true});
  px = {};
  const Peak full = measure(valid);
  ASSERT_EQ(full.error, "");
  EXPECT_EQ(full.width, 2048);
  EXPECT_WITHIN_BOUND(full, 2048, 2048);
  EXPECT_GE(full.bytes, 30 << 20);  // 24 MiB of coefficients, 12 of pixels: the count sees them
  const Peak scaled = measure(valid, true);
  EXPECT_EQ(scaled.error, "");
  EXPECT_WITHIN_BOUND(scaled, 2048, 2048);
}

TEST(DecodeMemory, GifBmpAndPnmDeclaringLargeSizesStayBounded) {
  SKIP_WITHOUT_COUNTING();
  // A GIF whose logical screen is 4000 x 4000 over a 2 x 2 frame: stb_image's RGBA screen,
  // background and history (9 bytes a pixel) and the RGB copy, within the bound.
  const Bytes palette = {255, 0, 0, 0, 255, 0, 0, 0, 255, 1, 2, 3};
  const Bytes gif = test::make_gif(4000, 4000, 2, 2, {0, 1, 2, 3}, palette);
  Peak p = measure(gif);
  EXPECT_EQ(p.error, "");
  EXPECT_EQ(p.width, 4000);
  EXPECT_WITHIN_BOUND(p, 4000, 4000);
  // A 4000 x 4000 BMP header over 6 bytes of pixels: refused before stb_image allocates.
  Bytes bmp = test::make_bmp24(1, 2, {1, 2, 3, 4, 5, 6}, true);
  for (int i = 0; i < 4; ++i) {
    bmp[18 + size_t(i)] = uint8_t(4000 >> (8 * i));
    bmp[22 + size_t(i)] = uint8_t(uint32_t(-4000) >> (8 * i));
  }
  p = measure(bmp);
  EXPECT_NE(p.error.find("truncated BMP"), std::string::npos) << p.error;
  EXPECT_LE(p.bytes, 1 << 20);
  // A PNM raster shorter than its header declares: refused before the pixels are allocated.
  const std::string pgm = "P5\n8000 8000\n255\nabc";
  p = measure(Bytes(pgm.begin(), pgm.end()));
  EXPECT_NE(p.error.find("truncated PNM"), std::string::npos) << p.error;
  EXPECT_LE(p.bytes, 1 << 20);
}

}  // namespace
}  // namespace dplab
