#include "dplab/train/data/predict_input.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "dplab/core/error.h"
#include "dplab/data/decode.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/transforms.h"

namespace dplab {
namespace fs = std::filesystem;

namespace {

constexpr const char* kExpected =
    "an image (JPEG, PNG, PNM, BMP, GIF, TGA), a folder of images, or a .safetensors batch "
    "holding tensor 'input'";

// What the sniffer reads of a file: every header dplab reads lies in its first bytes, except
// where a format lets metadata come first (a JPEG's EXIF and ICC segments before its frame
// header, a PNG's palette, text and ICC chunks before its first IDAT); those are told by their
// signature when the header lies further in.
constexpr size_t kSniffBytes = size_t(1) << 20;

// The format a file's first bytes announce, for the formats with a signature of several bytes
// (JPEG, PNG, GIF; BMP with one of the DIB header sizes stb_image reads).
const char* image_signature(const std::vector<uint8_t>& b) {
  auto starts = [&](const char* s, size_t n) {
    return b.size() >= n && std::memcmp(b.data(), s, n) == 0;
  };
  if (is_jpeg(b.data(), b.size())) return "JPEG";
  if (starts("\x89PNG\r\n\x1a\n", 8)) return "PNG";
  if (starts("GIF87a", 6) || starts("GIF89a", 6)) return "GIF";
  if (starts("BM", 2) && b.size() >= 18) {
    const uint32_t hsz =
        uint32_t(b[14]) | uint32_t(b[15]) << 8 | uint32_t(b[16]) << 16 | uint32_t(b[17]) << 24;
    if (hsz == 12 || hsz == 40 || hsz == 56 || hsz == 108 || hsz == 124) return "BMP";
  }
  return nullptr;
}

std::vector<uint8_t> head_bytes(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  DPLAB_CHECK(in.good(), "cannot open {}", path);
  std::vector<uint8_t> b(n);
  in.read(reinterpret_cast<char*>(b.data()), std::streamsize(n));
  b.resize(size_t(in.gcount()));
  return b;
}

}  // namespace

InputKind sniff_input(const std::string& path, std::string* found) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  DPLAB_CHECK(!ec, "cannot read {}: {}", path, ec.message());
  const std::vector<uint8_t> b = head_bytes(path, size_t(std::min<uintmax_t>(size, kSniffBytes)));
  std::string what;
  InputKind kind = InputKind::other;
  // safetensors: an 8-byte little-endian header length that fits the file, then '{'.
  if (b.size() > 8) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | b[size_t(i)];
    if (size >= 8 && n <= size - 8 && b[8] == '{') {  // (n + 8 could wrap)
      kind = InputKind::safetensors;
      what = "a safetensors file";
    }
  }
  if (kind == InputKind::other) {
    try {
      // The header only: the format and the size (any size: the pixels are not decoded here).
      const ImageHeader h = read_image_header(b.data(), b.size(), path, int64_t(1) << 62);
      kind = InputKind::image;
      what = fmt::format("a {} image", image_format_name(h.format));
    } catch (const Error&) {
      // The header lies past what was read, or is damaged: decide by the signature (decoding
      // the file then says what is wrong with it, as for an image found in a folder).
      if (const char* format = image_signature(b)) {
        kind = InputKind::image;
        what = fmt::format("a {} image", format);
      }
    }
  }
  if (kind == InputKind::other) {
    // Described by its first 64 bytes.
    const auto end = b.begin() + long(std::min<size_t>(b.size(), 64));
    const bool text = !b.empty() && std::all_of(b.begin(), end, [](uint8_t c) {
      return c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7f) || c >= 0x80;
    });
    if (b.empty()) {
      what = "an empty file";
    } else if (text) {
      what = fmt::format("text ('{}')",
                         std::string(b.begin(), b.begin() + std::min<size_t>(b.size(), 24)));
      for (char& c : what)
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    } else {
      what = "binary data starting";
      for (size_t i = 0; i < std::min<size_t>(b.size(), 8); ++i)
        what += fmt::format(" {:02x}", b[i]);
    }
  }
  if (found) *found = what;
  return kind;
}

std::vector<std::string> collect_images(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    if (fs::is_directory(in, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::recursive_directory_iterator(in, ec)) {
        const std::string ext = e.path().extension().string();
        if (e.is_regular_file() && ext.size() > 1 && is_image_extension(ext.substr(1)))
          found.push_back(e.path().string());
      }
      DPLAB_CHECK(!ec, "cannot list {}: {}", in, ec.message());
      DPLAB_CHECK(!found.empty(), "{}: no image files (.jpg, .jpeg, .png, ...) in the folder", in);
      std::sort(found.begin(), found.end());
      out.insert(out.end(), found.begin(), found.end());
      continue;
    }
    DPLAB_CHECK(fs::exists(in, ec), "{}: no such file or folder", in);
    std::string what;
    DPLAB_CHECK(sniff_input(in, &what) == InputKind::image, "{}: expected {}; found {}", in,
                kExpected, what);
    out.push_back(in);
  }
  return out;
}

Tensor image_for_model(const std::string& path, const Shape& sample_shape, int64_t max_pixels) {
  DPLAB_CHECK(sample_shape.size() == 3 && (sample_shape[0] == 3 || sample_shape[0] == 1),
              "{}: the model takes {} samples; images fit models taking [3, H, W] or [1, H, W]",
              path, shape_str(sample_shape));
  const std::vector<uint8_t> bytes = read_whole_file(path);
  const int h = int(sample_shape[1]), w = int(sample_shape[2]);
  Tensor t = Tensor::empty(sample_shape, DType::f32);
  float* out = t.data<float>();
  if (sample_shape[0] == 3) {
    ImageTransformOptions o;
    o.size = h;
    o.train = false;
    o.max_pixels = max_pixels;
    decode_and_transform(bytes.data(), bytes.size(), path, o, nullptr, out);
    return t;
  }
  const RgbImage img = decode_image(bytes.data(), bytes.size(), path, 0, 0, max_pixels);
  std::vector<float> rgb(size_t(3 * h * w));
  Normalization unit;
  unit.mean = {0, 0, 0};
  unit.std = {1, 1, 1};
  resample_to_chw(img, CropBox{0, 0, double(img.width), double(img.height)}, w, h, false, unit,
                  rgb.data());
  const size_t plane = size_t(h * w);
  for (size_t i = 0; i < plane; ++i) out[i] = (rgb[i] + rgb[plane + i] + rgb[2 * plane + i]) / 3;
  return t;
}

std::vector<std::pair<int, double>> top_k(const float* logits, int classes, int k) {
  double m = -INFINITY;
  for (int c = 0; c < classes; ++c) m = std::max(m, double(logits[c]));
  double sum = 0;
  for (int c = 0; c < classes; ++c) sum += std::exp(double(logits[c]) - m);
  std::vector<std::pair<int, double>> all;
  for (int c = 0; c < classes; ++c) all.push_back({c, std::exp(double(logits[c]) - m) / sum});
  k = std::clamp(k, 0, classes);
  std::partial_sort(all.begin(), all.begin() + k, all.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  all.resize(size_t(k));
  return all;
}

}  // namespace dplab
