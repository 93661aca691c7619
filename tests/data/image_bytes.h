// Encoded images written byte by byte for the decoder tests (PNG chunks with zlib, BMP, GIF with
// uncompressed LZW codes, JPEG frame-size patches): encoders independent of the decoders under
// test, so a test can write exactly the file it needs, damaged or hostile ones included.
#pragma once
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace dplab::test {

using Bytes = std::vector<uint8_t>;

inline void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

inline void put_le(Bytes& b, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

// One chunk: length, type, data, CRC-32 of type and data. `claimed_length` (when not -1) is
// written instead of the data's length, for chunks that lie about it.
inline void png_chunk(Bytes& out, const char* type, const Bytes& data,
                      int64_t claimed_length = -1) {
  put_be32(out, uint32_t(claimed_length >= 0 ? uint64_t(claimed_length) : data.size()));
  Bytes body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put_be32(out, uint32_t(crc32(0, body.data(), uInt(body.size()))));
}

inline Bytes png_signature() {
  return {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};
}

inline Bytes png_ihdr(uint32_t w, uint32_t h, uint8_t depth, uint8_t colour_type,
                      uint8_t interlace = 0) {
  Bytes ihdr;
  put_be32(ihdr, w);
  put_be32(ihdr, h);
  ihdr.insert(ihdr.end(), {depth, colour_type, 0, 0, interlace});
  return ihdr;
}

inline Bytes zlib_compress(const Bytes& raw, int level = 6) {
  uLongf n = compressBound(uLong(raw.size()));
  Bytes z(n);
  if (compress2(z.data(), &n, raw.data(), uLong(raw.size()), level) != Z_OK)
    throw std::runtime_error("zlib compress2 failed");
  z.resize(n);
  return z;
}

struct PngChunk {
  std::string type;
  Bytes data;
};

// An 8-bit PNG of `channels` samples per pixel (colour type 0 grey, 2 RGB, 3 palette, 4
// grey + alpha, 6 RGBA) from `pixels` (w * h * channels bytes, row-major), every row with filter
// byte 0; Adam7-interlaced when `interlace`. `before_idat` chunks go between IHDR (and PLTE) and
// the IDAT.
inline Bytes make_png8(uint32_t w, uint32_t h, uint8_t colour_type, const Bytes& pixels,
                       bool interlace = false, const Bytes& palette = {},
                       const std::vector<PngChunk>& before_idat = {}) {
  const size_t channels = colour_type == 0 || colour_type == 3 ? 1
                          : colour_type == 4                   ? 2
                          : colour_type == 2                   ? 3
                                                               : 4;
  if (pixels.size() != size_t(w) * h * channels) throw std::runtime_error("make_png8: size");
  Bytes raw;
  auto put_rows = [&](uint32_t x0, uint32_t y0, uint32_t dx, uint32_t dy) {
    if (x0 >= w || y0 >= h) return;  // an empty pass has no rows at all
    for (uint32_t y = y0; y < h; y += dy) {
      raw.push_back(0);
      for (uint32_t x = x0; x < w; x += dx)
        for (size_t c = 0; c < channels; ++c)
          raw.push_back(pixels[(size_t(y) * w + x) * channels + c]);
    }
  };
  if (interlace) {
    const uint32_t passes[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                   {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
    for (const auto& p : passes) put_rows(p[0], p[1], p[2], p[3]);
  } else {
    put_rows(0, 0, 1, 1);
  }
  Bytes out = png_signature();
  png_chunk(out, "IHDR", png_ihdr(w, h, 8, colour_type, interlace ? 1 : 0));
  if (!palette.empty()) png_chunk(out, "PLTE", palette);
  for (const PngChunk& c : before_idat) png_chunk(out, c.type.c_str(), c.data);
  png_chunk(out, "IDAT", zlib_compress(raw));
  png_chunk(out, "IEND", {});
  return out;
}

// A 24-bit BMP (BITMAPINFOHEADER) of w x h from RGB pixels (row-major, top row first), stored
// bottom-up (positive height, the usual order) or top-down (negative height).
inline Bytes make_bmp24(int w, int h, const Bytes& rgb, bool top_down) {
  const uint32_t row = uint32_t((w * 3 + 3) / 4 * 4);
  const uint32_t data_size = row * uint32_t(h);
  Bytes out = {'B', 'M'};
  put_le(out, 54 + data_size, 4);
  put_le(out, 0, 4);
  put_le(out, 54, 4);
  put_le(out, 40, 4);
  put_le(out, uint32_t(w), 4);
  put_le(out, uint32_t(top_down ? -h : h), 4);
  put_le(out, 1, 2);
  put_le(out, 24, 2);
  put_le(out, 0, 4);  // BI_RGB
  put_le(out, data_size, 4);
  for (int i = 0; i < 4; ++i) put_le(out, 0, 4);
  for (int i = 0; i < h; ++i) {
    const int y = top_down ? i : h - 1 - i;
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = &rgb[(size_t(y) * size_t(w) + size_t(x)) * 3];
      out.insert(out.end(), {p[2], p[1], p[0]});
    }
    out.resize(out.size() + (row - uint32_t(w) * 3), 0);
  }
  return out;
}

// A 24-bit TGA of w x h from RGB pixels (top row first, stored top-down: descriptor bit 5),
// uncompressed (type 2) or run-length coded (type 10) with one raw packet per row.
inline Bytes make_tga24(int w, int h, const Bytes& rgb, bool rle) {
  Bytes out = {0, 0, uint8_t(rle ? 10 : 2), 0, 0, 0, 0, 0, 0, 0, 0, 0};
  put_le(out, uint32_t(w), 2);
  put_le(out, uint32_t(h), 2);
  out.insert(out.end(), {24, 0x20});
  for (int y = 0; y < h; ++y) {
    if (rle) out.push_back(uint8_t(w - 1));  // a raw packet of w pixels (w <= 128)
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = &rgb[(size_t(y) * size_t(w) + size_t(x)) * 3];
      out.insert(out.end(), {p[2], p[1], p[0]});
    }
  }
  return out;
}

// A GIF89a with a logical screen of screen_w x screen_h, one w x h frame at (0, 0) of palette
// indices 0..3 into a 4-colour global table (`palette`, 12 bytes), LZW-coded uncompressed: a
// clear code before every index keeps every code 3 bits wide.
inline Bytes make_gif(int screen_w, int screen_h, int w, int h, const Bytes& indices,
                      const Bytes& palette) {
  Bytes out = {'G', 'I', 'F', '8', '9', 'a'};
  put_le(out, uint32_t(screen_w), 2);
  put_le(out, uint32_t(screen_h), 2);
  out.insert(out.end(), {0x81, 0, 0});  // global table of 2^(1+1) = 4 colours
  out.insert(out.end(), palette.begin(), palette.end());
  out.push_back(0x2C);  // image descriptor
  put_le(out, 0, 2);
  put_le(out, 0, 2);
  put_le(out, uint32_t(w), 2);
  put_le(out, uint32_t(h), 2);
  out.push_back(0);
  out.push_back(2);  // LZW minimum code size: clear = 4, end = 5
  Bytes lzw;
  uint32_t acc = 0;
  int bits = 0;
  auto code = [&](uint32_t c) {
    acc |= c << bits;
    bits += 3;
    while (bits >= 8) {
      lzw.push_back(uint8_t(acc));
      acc >>= 8;
      bits -= 8;
    }
  };
  for (uint8_t i : indices) {
    code(4);
    code(i);
  }
  code(5);
  if (bits > 0) lzw.push_back(uint8_t(acc));
  for (size_t at = 0; at < lzw.size(); at += 255) {  // data sub-blocks of at most 255 bytes
    const size_t n = std::min<size_t>(255, lzw.size() - at);
    out.push_back(uint8_t(n));
    out.insert(out.end(), lzw.begin() + long(at), lzw.begin() + long(at + n));
  }
  out.push_back(0);
  out.push_back(0x3B);
  return out;
}

// Rewrites the frame size in a JPEG's SOF marker (baseline, extended or progressive), leaving the
// scans as they are: a small file that declares a large image.
inline void patch_jpeg_size(Bytes& jpg, uint16_t w, uint16_t h) {
  for (size_t i = 2; i + 9 < jpg.size(); ++i) {
    if (jpg[i] == 0xFF && (jpg[i + 1] == 0xC0 || jpg[i + 1] == 0xC1 || jpg[i + 1] == 0xC2)) {
      jpg[i + 5] = uint8_t(h >> 8);
      jpg[i + 6] = uint8_t(h);
      jpg[i + 7] = uint8_t(w >> 8);
      jpg[i + 8] = uint8_t(w);
      return;
    }
  }
  throw std::runtime_error("patch_jpeg_size: no SOF marker");
}

}  // namespace dplab::test
