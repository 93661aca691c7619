// Writes the seed corpus of the fuzz targets: small valid inputs of every format each target
// reads, made with dplab's own writers where it has one (IDX, tar, JPEG, safetensors) and
// byte by byte where it has none (PNG, PNM, BMP, pax and GNU long-name tar headers), so the
// fuzzer starts from files the product accepts.
//
//   build/tests/fuzz/dplab_fuzz_make_corpus tests/fuzz/corpus
//
// The output is committed (tests/fuzz/corpus/<target>/); re-running gives the same bytes.
#include <zlib.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../data/image_bytes.h"
#include "dplab/core/safetensors.h"
#include "dplab/core/tensor.h"
#include "dplab/data/decode.h"
#include "dplab/data/idx.h"
#include "dplab/data/tar.h"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

namespace {

void write_file(const fs::path& p, const Bytes& b) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

Bytes read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), {});
}

Bytes text(const std::string& s) {
  return Bytes(s.begin(), s.end());
}

// A deterministic pattern of `n` bytes (gradients with some texture, so JPEG/PNG encoders have
// something to code).
Bytes pattern(size_t n, unsigned seed) {
  Bytes v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t((i * 37 + seed * 11 + (i >> 3) * 5) & 0xff);
  return v;
}

// ---- PNG, written by hand: signature, IHDR, one zlib IDAT (filter byte 0 per row), IEND ----
void put_be32(Bytes& b, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) b.push_back(uint8_t(v >> s));
}

void png_chunk(Bytes& out, const char* type, const Bytes& data) {
  put_be32(out, uint32_t(data.size()));
  Bytes td(type, type + 4);
  td.insert(td.end(), data.begin(), data.end());
  out.insert(out.end(), td.begin(), td.end());
  put_be32(out, uint32_t(crc32(0, td.data(), uInt(td.size()))));
}

// color_type: 0 grey, 2 RGB, 3 palette, 4 grey+alpha, 6 RGBA; 8-bit samples.
Bytes make_png(int w, int h, int color_type, unsigned seed) {
  const int channels = color_type == 0 || color_type == 3 ? 1
                       : color_type == 4                  ? 2
                       : color_type == 2                  ? 3
                                                          : 4;
  Bytes raw;
  const Bytes px = pattern(size_t(w) * size_t(h) * size_t(channels), seed);
  for (int y = 0; y < h; ++y) {
    raw.push_back(0);  // filter: none
    for (int x = 0; x < w * channels; ++x) {
      uint8_t v = px[size_t(y) * size_t(w * channels) + size_t(x)];
      if (color_type == 3) v %= 4;  // 4-entry palette
      raw.push_back(v);
    }
  }
  uLongf zlen = compressBound(uLong(raw.size()));
  Bytes z(zlen);
  compress2(z.data(), &zlen, raw.data(), uLong(raw.size()), 9);
  z.resize(zlen);
  Bytes out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  Bytes ihdr;
  put_be32(ihdr, uint32_t(w));
  put_be32(ihdr, uint32_t(h));
  ihdr.insert(ihdr.end(), {8, uint8_t(color_type), 0, 0, 0});
  png_chunk(out, "IHDR", ihdr);
  if (color_type == 3) png_chunk(out, "PLTE", {0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255});
  png_chunk(out, "IDAT", z);
  png_chunk(out, "IEND", {});
  return out;
}

// ---- PNM and BMP ----
Bytes make_pnm(const char* magic, int w, int h, int maxval, int channels, unsigned seed) {
  Bytes out = text(std::string(magic) + "\n" + std::to_string(w) + " " + std::to_string(h) + "\n" +
                   std::to_string(maxval) + "\n");
  const size_t bytes_per = maxval > 255 ? 2 : 1;
  const Bytes px = pattern(size_t(w) * size_t(h) * size_t(channels) * bytes_per, seed);
  out.insert(out.end(), px.begin(), px.end());
  return out;
}

void put_le(Bytes& b, uint32_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(uint8_t(v >> (8 * i)));
}

Bytes make_bmp24(int w, int h, unsigned seed) {
  const uint32_t row = uint32_t((w * 3 + 3) / 4 * 4);
  const uint32_t data_size = row * uint32_t(h);
  Bytes out = {'B', 'M'};
  put_le(out, 54 + data_size, 4);
  put_le(out, 0, 4);
  put_le(out, 54, 4);
  put_le(out, 40, 4);  // BITMAPINFOHEADER
  put_le(out, uint32_t(w), 4);
  put_le(out, uint32_t(h), 4);
  put_le(out, 1, 2);
  put_le(out, 24, 2);
  put_le(out, 0, 4);  // BI_RGB
  put_le(out, data_size, 4);
  put_le(out, 2835, 4);
  put_le(out, 2835, 4);
  put_le(out, 0, 4);
  put_le(out, 0, 4);
  const Bytes px = pattern(data_size, seed);
  out.insert(out.end(), px.begin(), px.end());
  return out;
}

// ---- tar headers written by hand (pax 'x' and GNU 'L' entries TarWriter never writes) ----
Bytes tar_header(const std::string& name, size_t size, char type) {
  Bytes h(512, 0);
  std::memcpy(h.data(), name.data(), std::min<size_t>(name.size(), 100));
  std::snprintf(reinterpret_cast<char*>(h.data()) + 100, 8, "%07o", 0644);
  std::snprintf(reinterpret_cast<char*>(h.data()) + 108, 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(h.data()) + 116, 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(h.data()) + 124, 12, "%011zo", size);
  std::snprintf(reinterpret_cast<char*>(h.data()) + 136, 12, "%011o", 0);
  h[156] = uint8_t(type);
  std::memcpy(h.data() + 257, "ustar", 6);
  h[263] = '0';
  h[264] = '0';
  std::memset(h.data() + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t c : h) sum += c;
  std::snprintf(reinterpret_cast<char*>(h.data()) + 148, 8, "%06o", sum);
  h[155] = ' ';
  return h;
}

void tar_entry(Bytes& out, const std::string& name, const Bytes& data, char type = '0') {
  const Bytes h = tar_header(name, data.size(), type);
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), data.begin(), data.end());
  out.resize((out.size() + 511) / 512 * 512, 0);
}

// One pax record "LEN key=value\n", LEN counting itself.
std::string pax_record(const std::string& key, const std::string& value) {
  const std::string body = " " + key + "=" + value + "\n";
  size_t len = body.size() + 1;
  while (std::to_string(len).size() + body.size() != len) ++len;
  return std::to_string(len) + body;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  const fs::path root(argv[1]);
  const fs::path scratch = fs::temp_directory_path() / "dplab-fuzz-make-corpus";
  fs::create_directories(scratch);

  // Small encoded images, shared by the image and tar corpora.
  const Bytes rgb16 = pattern(16 * 16 * 3, 1), grey9 = pattern(9 * 7, 2),
              cmyk8 = pattern(8 * 8 * 4, 3);
  std::vector<std::pair<std::string, Bytes>> images = {
      {"rgb16x16_420.jpg", dplab::encode_jpeg(rgb16.data(), 16, 16, 3, {90, 420, false})},
      {"rgb16x16_444_progressive.jpg",
       dplab::encode_jpeg(rgb16.data(), 16, 16, 3, {75, 444, true})},
      {"grey9x7.jpg", dplab::encode_jpeg(grey9.data(), 9, 7, 1, {90, 0, false})},
      {"cmyk8x8.jpg", dplab::encode_jpeg(cmyk8.data(), 8, 8, 4, {90, 422, false})},
      {"rgb5x3.png", make_png(5, 3, 2, 4)},
      {"grey4x4.png", make_png(4, 4, 0, 5)},
      {"palette6x2.png", make_png(6, 2, 3, 6)},
      {"rgba3x5.png", make_png(3, 5, 6, 7)},
      {"greyalpha2x2.png", make_png(2, 2, 4, 8)},
      {"grey4x3.pgm", make_pnm("P5", 4, 3, 255, 1, 9)},
      {"grey16bit3x2.pgm", make_pnm("P5", 3, 2, 65535, 1, 10)},
      {"rgb3x2.ppm", make_pnm("P6", 3, 2, 255, 3, 11)},
      {"rgb3x2.bmp", make_bmp24(3, 2, 12)},
      // One pixel wide or high: crops of a single row or column (issue #16 lists 40x1 and 1x1
      // PNG/JPEG images read out of bounds by resample_to_chw).
      {"rgb40x1.png", make_png(40, 1, 2, 14)},
      {"rgb1x1.png", make_png(1, 1, 2, 15)},
      {"rgb40x1.jpg", dplab::encode_jpeg(rgb16.data(), 40, 1, 3, {90, 444, false})},
      {"rgb1x1.jpg", dplab::encode_jpeg(rgb16.data(), 1, 1, 3, {90, 444, false})},
  };
  for (const auto& [name, bytes] : images) write_file(root / "image" / name, bytes);

  // Hostile and unusual images (issue #38), written with tests/data/image_bytes.h: PNG chunks
  // whose length runs past the file (every kind of chunk: ancillary text and ICC, critical,
  // unknown), lengths over 2^31, a chunk one byte too long, IDAT data too small for the declared
  // size; valid PNGs with text, ICC and palette chunks before the IDAT and Adam7 interlacing; a
  // top-down BMP; a GIF; progressive JPEGs whose frame header declares far more than their scans
  // hold.
  namespace t = dplab::test;
  std::vector<std::pair<std::string, Bytes>> hostile;
  auto png_claiming = [](const char* type, uint32_t length, const Bytes& tail) {
    Bytes png = t::png_signature();
    t::png_chunk(png, "IHDR", t::png_ihdr(16, 16, 8, 2));
    t::put_be32(png, length);
    png.insert(png.end(), type, type + 4);
    png.insert(png.end(), tail.begin(), tail.end());
    return png;
  };
  for (const char* type : {"tEXt", "zTXt", "iTXt", "iCCP", "PLTE", "IDAT", "IEND", "prVt"})
    hostile.push_back({std::string("png_") + type + "_claims_2GiB.png",
                       png_claiming(type, 0x7ffffff0u, text("abc"))});
  hostile.push_back(
      {"png_tEXt_length_over_2p31.png", png_claiming("tEXt", 0xfffffff0u, text("abc"))});
  {
    const Bytes rgb = pattern(13 * 11 * 3, 20);
    Bytes one_past = t::make_png8(13, 11, 2, rgb);
    one_past[33 + 3] += 1;  // the IDAT's length, one more than the file holds
    hostile.push_back({"png_IDAT_one_byte_too_long.png", one_past});
    Bytes comment = text("Comment");
    comment.push_back(0);
    comment.resize(300, 'c');
    Bytes iccp = text("sRGB");
    iccp.insert(iccp.end(), {0, 0});
    const Bytes profile = t::zlib_compress(pattern(500, 21));
    iccp.insert(iccp.end(), profile.begin(), profile.end());
    hostile.push_back(
        {"png_text_icc_before_idat.png",
         t::make_png8(13, 11, 2, rgb, false, {}, {{"tEXt", comment}, {"iCCP", iccp}})});
    hostile.push_back({"png_adam7_13x11.png", t::make_png8(13, 11, 2, rgb, true)});
    Bytes palette, indices = pattern(13 * 11, 22);
    for (int i = 0; i < 200; ++i) palette.insert(palette.end(), {uint8_t(i), uint8_t(3 * i), 7});
    for (uint8_t& v : indices) v %= 200;
    hostile.push_back(
        {"png_palette200_adam7.png", t::make_png8(13, 11, 3, indices, true, palette)});
    hostile.push_back({"bmp_top_down_13x11.bmp", t::make_bmp24(13, 11, rgb, true)});
  }
  {
    Bytes tall = t::png_signature();
    t::png_chunk(tall, "IHDR", t::png_ihdr(1, 67108864, 8, 0));
    t::png_chunk(tall, "IDAT", t::zlib_compress(Bytes(8, 0)));
    t::png_chunk(tall, "IEND", {});
    hostile.push_back({"png_1x67108864_short_idat.png", tall});
  }
  hostile.push_back(
      {"gif_4x3_frame_3x2.gif",
       t::make_gif(4, 3, 3, 2, {0, 1, 2, 3, 2, 1}, {255, 0, 0, 0, 255, 0, 0, 0, 255, 9, 9, 9})});
  for (const int channels : {3, 4}) {
    Bytes jpg = dplab::encode_jpeg(rgb16.data(), 16, 16, 3, {90, 444, true});
    if (channels == 4) jpg = dplab::encode_jpeg(cmyk8.data(), 8, 8, 4, {90, 444, true});
    t::patch_jpeg_size(jpg, 8000, 8000);
    hostile.push_back({channels == 3 ? "jpeg_progressive_declares_8000x8000.jpg"
                                     : "jpeg_cmyk_progressive_declares_8000x8000.jpg",
                       jpg});
  }
  for (const auto& [name, bytes] : hostile) write_file(root / "image" / name, bytes);

  // The predict sniffer (fuzz_predict): images of every format, including those whose header
  // ends past byte 64, a safetensors batch, text, and binary data.
  for (const char* name : {"rgb16x16_420.jpg", "rgb5x3.png", "rgb3x2.bmp", "rgb3x2.ppm"})
    for (const auto& [n, bytes] : images)
      if (n == name) write_file(root / "predict" / name, bytes);
  for (const auto& [name, bytes] : hostile)
    if (name == "png_text_icc_before_idat.png" || name == "png_palette200_adam7.png" ||
        name == "bmp_top_down_13x11.bmp" || name == "gif_4x3_frame_3x2.gif" ||
        name == "png_tEXt_claims_2GiB.png")
      write_file(root / "predict" / name, bytes);
  write_file(root / "predict" / "notes.txt", text("hello, this is text\n"));

  // IDX: 3 images of 4x5 and their labels, plain and gzip (through dplab's writers).
  dplab::IdxImages idx;
  idx.count = 3;
  idx.rows = 4;
  idx.cols = 5;
  idx.pixels = pattern(3 * 4 * 5, 13);
  const Bytes labels = {0, 7, 9};
  for (const bool gz : {false, true}) {
    const std::string sfx = gz ? ".gz" : "";
    dplab::write_idx_images((scratch / ("images" + sfx)).string(), idx, gz);
    dplab::write_idx_labels((scratch / ("labels" + sfx)).string(), labels, gz);
    write_file(root / "idx" / ("images-idx3-ubyte" + sfx), read_file(scratch / ("images" + sfx)));
    write_file(root / "idx" / ("labels-idx1-ubyte" + sfx), read_file(scratch / ("labels" + sfx)));
  }

  // Tar shards: two samples through TarWriter; the same with a pax 'path' header and a GNU
  // long name (hand-written headers).
  {
    const std::string p = (scratch / "shard.tar").string();
    {
      dplab::TarWriter w(p);
      w.add("00000000.jpg", images[0].second);
      w.add("00000000.cls", text("3"));
      w.add("00000001.png", images[4].second);
      w.add("00000001.cls", text("0\n"));
    }
    write_file(root / "tar" / "two_samples.tar", read_file(p));
    Bytes pax;
    tar_entry(pax, "PaxHeaders/0", text(pax_record("path", "dir/00000002.png")), 'x');
    tar_entry(pax, "ignored-by-pax-path.png", images[5].second);
    tar_entry(pax, "dir/00000002.cls", text("1"));
    const std::string long_name = "long/" + std::string(110, 'n') + "/00000003.jpg";
    tar_entry(pax, "././@LongLink", text(long_name + std::string(1, '\0')), 'L');
    tar_entry(pax, long_name.substr(0, 100), images[2].second);
    const std::string long_cls = long_name.substr(0, long_name.size() - 4) + ".cls";
    tar_entry(pax, "././@LongLink", text(long_cls + std::string(1, '\0')), 'L');
    tar_entry(pax, long_cls.substr(0, 100), text("2"));
    tar_entry(pax, "dir/", {}, '5');
    pax.resize(pax.size() + 1024, 0);  // end-of-archive blocks
    write_file(root / "tar" / "pax_and_long_name.tar", pax);
  }

  // safetensors: f32, i64 and u8 tensors with metadata; an empty file (no tensors).
  {
    const std::string p = (scratch / "t.safetensors").string();
    std::vector<dplab::NamedTensor> ts = {
        {"conv.weight", dplab::Tensor::from_vector({1, -2, 3.5f, 0, 1e-3f, 7}, {2, 3})},
        {"bn.num_batches_tracked", dplab::Tensor::from_vector_i64({5}, {})},
        {"step", dplab::Tensor::from_vector_i64({1, 2}, {2})},
        {"mask", dplab::Tensor::zeros({3}, dplab::DType::u8)},
    };
    dplab::save_safetensors(p, ts, {{"format", "pt"}, {"dplab.epoch", "2"}});
    write_file(root / "safetensors" / "four_tensors.safetensors", read_file(p));
    dplab::save_safetensors(p, {});
    write_file(root / "safetensors" / "empty.safetensors", read_file(p));
    dplab::save_safetensors(p, {{"input", dplab::Tensor::zeros({1, 3, 2, 2})}});
    write_file(root / "predict" / "batch.safetensors", read_file(p));
  }

  // TOML: every value type the flattener handles, tables, `value`, arrays, inline tables.
  write_file(root / "toml" / "all_types.toml", text(R"(# a training configuration
model = "resnet18"
epochs = 3
batch = 32
nesterov = true
wd = 5e-5
data = "shards:/data/train-*.tar"
steps = [30, 60, 80]

[lr]
value = 0.1
schedule = "multistep"
warmup = { epochs = 5, start = 0.01 }

[daso.plateau]
patience = 2
threshold = -1.5e-3
)"));

  // Options (the config through the option checks): the same file, a run record, values of
  // every type a key cannot take, and the shapes that made errors slow and long (issue #38): a
  // long key, a long value, many unknown and near-miss keys (small here: the fuzzer grows them).
  write_file(root / "options" / "all_types.toml", read_file(root / "toml" / "all_types.toml"));
  write_file(root / "options" / "run_record.json", text(R"({"options": {
  "model": {"value": "mnist_cnn", "default": true}, "lr": {"value": "0.05", "default": false},
  "lr.milestones": [30, 60], "nesterov": true, "batch": 32, "algo": "daso", "daso.B_max": "2"},
  "version": "0.1"}
)"));
  write_file(root / "options" / "bad_types.toml", text(R"(lr = [[1]]
when = 1979-05-27T07:32:00Z
at = 07:32:00
[[runs]]
x = 1
)"));
  write_file(root / "options" / "bad_values.toml", text(R"(lr = "abc"
batch = 0
amp = "fp16"
nesterov = "maybe"
algo = "dasso"
lr.schedule = "cosin"
)"));
  write_file(root / "options" / "long_key.toml",
             text(std::string(3000, 'a') + " = 1\nalgo = \"" + std::string(3000, 'd') + "\"\n"));
  std::string many;
  for (int i = 0; i < 500; ++i)
    many += "zz" + std::to_string(i) + " = 1\ndata.wrokers" + std::to_string(i) + " = 2\n";
  write_file(root / "options" / "many_keys.toml", text(many));

  // `dplab plot`'s metrics files, as `dplab train --out` writes them: start, epoch records with
  // a stage key, step records, the final record; a run killed mid-write (torn last line).
  const std::string epochs =
      "{\"kind\":\"start\",\"epoch\":0}\n"
      "{\"kind\":\"epoch\",\"epoch\":1,\"time_s\":0.5,\"test_acc\":0.61,\"loss\":1.2,"
      "\"algo.stage\":1.0}\n"
      "{\"kind\":\"step\",\"step\":10,\"loss\":0.9,\"lr\":0.01}\n"
      "{\"kind\":\"epoch\",\"epoch\":2,\"time_s\":0.5,\"test_acc\":0.72,\"loss\":0.8,"
      "\"algo.stage\":2.0}\n"
      "{\"kind\":\"step\",\"step\":20,\"loss\":0.7,\"lr\":0.005}\n"
      "{\"kind\":\"final\",\"epoch\":2,\"time_s\":4.5,\"test_acc\":0.73}\n";
  write_file(root / "plot_metrics" / "epochs_steps_final.jsonl", text(epochs));
  write_file(root / "plot_metrics" / "elapsed_s.jsonl",
             text("{\"epoch\":1,\"elapsed_s\":2.5,\"test_acc\":0.5,\"loss\":1}\n"
                  "{\"epoch\":2,\"elapsed_s\":4.75,\"test_acc\":0.6,\"loss\":0.5}\n"));
  write_file(root / "plot_metrics" / "torn_last_line.jsonl",
             text(epochs + "{\"kind\":\"epoch\",\"epoch\":3,\"test_ac"));

  // The chart layout: a flags byte and doubles (fuzz_plot_layout.cpp): the inputs of issue #38
  // that crashed or hung `dplab plot`, and an ordinary accuracy curve with every part drawn.
  const auto doubles = [](uint8_t flags, const std::vector<double>& v) {
    Bytes b{flags};
    b.resize(1 + v.size() * sizeof(double));
    std::memcpy(b.data() + 1, v.data(), v.size() * sizeof(double));
    return b;
  };
  write_file(root / "plot_layout" / "accuracy_all_parts",
             doubles(0x1f, {1, 0.5, 2, 0.61, 3, 0.72, 4, 0.8, 5, 0.83}));
  write_file(root / "plot_layout" / "zero_and_denormal_segv", doubles(0, {0, 5e-324}));
  write_file(root / "plot_layout" / "one_float_step_apart_endless_ticks",
             doubles(0, {1.0, 1.0000000000000002}));
  write_file(root / "plot_layout" / "thousand_float_step_apart_endless_ticks",
             doubles(0, {1000, 1000.0000000000001}));
  write_file(root / "plot_layout" / "x_spanning_doubles_bad_range_inf",
             doubles(0x10, {1e308, 1, -1e308, 2}));
  write_file(root / "plot_layout" / "y_spanning_doubles_invalid_matrix",
             doubles(0, {1e308, -1e308, 1.7976931348623157e308}));
  return 0;
}
