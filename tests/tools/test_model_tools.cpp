// `dplab eval` and `dplab predict` with checkpoints that record their model (final.safetensors's
// dplab.model): the model taken from the file, one clear message for a file that does not fit,
// eval on --data as given, predict on images and folders with class names, and refusal of
// non-image input. Checkpoints are written here by export_model from freshly built models; the
// references are the explicit --model path (the pre-existing one), the image counts the test
// wrote, and hand-computed softmax values.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "data/image_bytes.h"
#include "data/temp_dir.h"
#include "dplab/core/safetensors.h"
#include "dplab/data/decode.h"
#include "dplab/data/idx.h"
#include "dplab/data/shards.h"
#include "dplab/models/registry.h"
#include "dplab/train/data/predict_input.h"
#include "dplab/train/state/checkpoint.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;

// A w x h JPEG whose colour depends on `seed` (distinct images, so the model's outputs differ).
void write_jpeg(const std::filesystem::path& p, int seed, int w = 40, int h = 36) {
  std::vector<uint8_t> px(size_t(w * h * 3));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c)
        px[size_t((y * w + x) * 3 + c)] = uint8_t((x * (seed + 1) * 7 + y * 13 * (c + 1)) % 256);
  const auto bytes = encode_jpeg(px.data(), w, h, 3);
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

// An image folder <root>/cat (n_cat images) and <root>/dog (n_dog images).
void write_folder(const std::filesystem::path& root, int n_cat, int n_dog, int seed0 = 0) {
  for (int i = 0; i < n_cat; ++i) write_jpeg(root / "cat" / fmt::format("c{}.jpg", i), seed0 + i);
  for (int i = 0; i < n_dog; ++i)
    write_jpeg(root / "dog" / fmt::format("d{}.jpg", i), seed0 + 50 + i);
}

// A model file as `dplab train` writes final.safetensors.
std::string export_file(const ScopedTempDir& dir, const std::string& model, int classes,
                        const std::vector<std::string>& names = {}) {
  auto m = make_model(model, 7, classes);
  const std::string path = dir.file(model + ".safetensors");
  export_model(path, *m, model, LoopState{}, names);
  return path;
}

size_t lines(const std::string& s) {
  return size_t(std::count(s.begin(), s.end(), '\n'));
}

TEST(ModelTools, EvalTakesTheModelFromTheCheckpoint) {
  ScopedTempDir dir("model-tools-eval");
  write_folder(dir.path / "imgs", 3, 2);
  const std::string ckpt = export_file(dir, "resnet18_cifar", 2, {"cat", "dog"});
  const std::string common =
      " --threads 2 --data folder:" + dir.file("imgs") + " --set data.image_size=32 --checkpoint ";
  const auto implicit = run_dplab("eval" + common + ckpt, dir.path / "a");
  ASSERT_EQ(implicit.status, 0) << implicit.err;
  const auto given = run_dplab("eval --model resnet18_cifar" + common + ckpt, dir.path / "b");
  ASSERT_EQ(given.status, 0) << given.err;
  EXPECT_NE(implicit.out.find("/5)"), std::string::npos) << implicit.out;
  EXPECT_EQ(implicit.out, given.out);
}

TEST(ModelTools, EvalMnistCnnWithoutModel) {
  ScopedTempDir dir("model-tools-mnist");
  const std::string ckpt = export_file(dir, "mnist_cnn", 10);
  const std::string common =
      " --threads 2 --data fashion-mnist --set data.test_limit=20 --checkpoint " + ckpt;
  const auto implicit = run_dplab("eval" + common, dir.path / "a");
  ASSERT_EQ(implicit.status, 0) << implicit.err;
  const auto given = run_dplab("eval --model mnist_cnn" + common, dir.path / "b");
  ASSERT_EQ(given.status, 0) << given.err;
  EXPECT_NE(implicit.out.find("/20)"), std::string::npos) << implicit.out;
  EXPECT_EQ(implicit.out, given.out);
}

// `dplab init` records the model (dplab.model) in the file it writes, so `dplab eval` of it needs
// no --model (issue #33): the same output as with --model given explicitly.
TEST(ModelTools, EvalOfAnInitFileWithoutModel) {
  ScopedTempDir dir("model-tools-init");
  const std::string file = dir.file("init.safetensors");
  const auto init = run_dplab("init --model mnist_cnn --seed 3 --out " + file, dir.path / "i");
  ASSERT_EQ(init.status, 0) << init.err;
  std::map<std::string, std::string> meta;
  (void)load_safetensors(file, &meta);
  EXPECT_EQ(meta["dplab.model"], "mnist_cnn");
  EXPECT_EQ(meta["dplab.seed"], "3");
  const std::string common =
      " --threads 2 --data fashion-mnist --set data.test_limit=20 --checkpoint " + file;
  const auto implicit = run_dplab("eval" + common, dir.path / "a");
  ASSERT_EQ(implicit.status, 0) << implicit.err;
  const auto given = run_dplab("eval --model mnist_cnn" + common, dir.path / "b");
  ASSERT_EQ(given.status, 0) << given.err;
  EXPECT_NE(implicit.out.find("/20)"), std::string::npos) << implicit.out;
  EXPECT_EQ(implicit.out, given.out);
}

// An IDX directory with `test` test images (all black) and labels i % 10, and a train split whose
// label file holds `train` labels (its image file a one-image stub: eval reads the test split).
std::string idx_dir(const ScopedTempDir& dir, const std::string& name, int64_t train,
                    int64_t test) {
  const auto d = dir.path / name;
  std::filesystem::create_directories(d);
  IdxImages img;
  img.rows = img.cols = 28;
  img.count = 1;
  img.pixels.assign(28 * 28, 0);
  write_idx_images((d / "train-images-idx3-ubyte.gz").string(), img);
  write_idx_labels((d / "train-labels-idx1-ubyte.gz").string(),
                   std::vector<uint8_t>(size_t(train)));
  img.count = test;
  img.pixels.assign(size_t(test * 28 * 28), 0);
  write_idx_images((d / "t10k-images-idx3-ubyte.gz").string(), img);
  std::vector<uint8_t> labels(static_cast<size_t>(test));
  for (int64_t i = 0; i < test; ++i) labels[size_t(i)] = uint8_t(i % 10);
  write_idx_labels((d / "t10k-labels-idx1-ubyte.gz").string(), labels);
  return d.string();
}

TEST(ModelTools, EvalReadsStandardMnistFromADirectory) {
  ScopedTempDir dir("model-tools-mnist-dir");
  const std::string ckpt = export_file(dir, "mnist_cnn", 10);
  const std::string full = idx_dir(dir, "full", 60000, 10000);
  auto r = run_dplab(
      "eval --threads 2 --data mnist:" + full + " --set data.test_limit=20 --checkpoint " + ckpt,
      dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("/20)"), std::string::npos) << r.out;
  // The 10,000-digit subset is mnist-10k, not mnist.
  const std::string sub = idx_dir(dir, "sub", 8000, 2000);
  r = run_dplab("eval --data mnist:" + sub + " --checkpoint " + ckpt, dir.path / "b");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("use --data mnist-10k:" + sub), std::string::npos) << r.err;
  r = run_dplab(
      "eval --threads 2 --data mnist-10k:" + sub + " --set data.test_limit=20 --checkpoint " + ckpt,
      dir.path / "c");
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST(ModelTools, MismatchedCheckpointSaysWhatItHolds) {
  ScopedTempDir dir("model-tools-mismatch");
  const std::string ckpt = export_file(dir, "resnet18_cifar", 10);
  auto r = run_dplab(
      "eval --model mnist_cnn --data fashion-mnist --set data.test_limit=5 "
      "--checkpoint " +
          ckpt,
      dir.path / "a");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("holds model 'resnet18_cifar'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("does not fit model 'mnist_cnn'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("missing (cnn1.weight"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unexpected ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("leave out --model"), std::string::npos) << r.err;
  EXPECT_LE(lines(r.err), 3u) << r.err;  // one message, not a line per key

  // A file without metadata: say so and ask for --model.
  auto m = make_model("mnist_cnn", 1, 10);
  const std::string bare = dir.file("bare.safetensors");
  save_safetensors(bare, m->state_dict());
  r = run_dplab("eval --data fashion-mnist --set data.test_limit=5 --checkpoint " + bare,
                dir.path / "b");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("records no model name"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("holds 6 tensors (cnn1.weight, cnn1.bias, cnn2.weight, ... (3 more))"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("give the model with --model"), std::string::npos) << r.err;
  // With --model it loads.
  r = run_dplab(
      "eval --model mnist_cnn --data fashion-mnist --set data.test_limit=5 "
      "--checkpoint " +
          bare,
      dir.path / "c");
  EXPECT_EQ(r.status, 0) << r.err;
}

// A file whose head has one tensor of a wrong shape (issue #38): the class count was taken from
// the head's weight, so a wrong fc1.weight built a model its fc1.bias did not fit, and the
// error blamed fc1.bias. Now the wrong tensor is named with its shape and the model's.
TEST(ModelTools, WrongShapeTensorIsNamedWithBothShapes) {
  ScopedTempDir dir("model-tools-wrong-shape");
  write_jpeg(dir.path / "x.jpg", 3, 28, 28);
  auto m = make_model("mnist_cnn", 7, 10);
  // A copy of mnist_cnn's state with `name` replaced by a tensor of `shape`.
  auto file_with = [&](const std::string& name, const Shape& shape) {
    std::vector<NamedTensor> ts;
    for (const auto& t : m->state_dict())
      ts.push_back({t.name, t.name == name ? Tensor::zeros(shape) : t.tensor});
    const std::string path = dir.file(name + ".safetensors");
    save_safetensors(path, ts, {{"format", "pt"}, {"dplab.model", "mnist_cnn"}});
    return path;
  };
  struct Case {
    std::string tensor;
    Shape shape;
    std::string says, other;
  };
  const std::vector<Case> cases = {
      {"fc1.weight",
       {12, 512},
       "fc1.weight [12, 512] in the file, [10, 512] in mnist_cnn",
       "fc1.bias"},
      {"fc1.bias", {12}, "fc1.bias [12] in the file, [10] in mnist_cnn", "fc1.weight"},
      {"cnn2.weight",
       {32, 16, 3, 3},
       "cnn2.weight [32, 16, 3, 3] in the file, [32, 16, 5, 5] in mnist_cnn",
       "fc1."},
  };
  for (const Case& c : cases) {
    const std::string file = file_with(c.tensor, c.shape);
    for (const std::string& cmd :
         {"eval --data fashion-mnist --set data.test_limit=5 --checkpoint " + file,
          "predict --checkpoint " + file + " " + dir.file("x.jpg")}) {
      const auto r = run_dplab(cmd, dir.path / "run");
      EXPECT_EQ(r.status, 1) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find("1 tensors of another shape (" + c.says + ")"), std::string::npos)
          << cmd << "\n"
          << r.err;
      EXPECT_EQ(r.err.find(c.other), std::string::npos) << cmd << "\n" << r.err;
    }
  }
}

TEST(ModelTools, EvalUsesShardsAsGiven) {
  ScopedTempDir dir("model-tools-shards");
  write_folder(dir.path / "train", 4, 3);
  write_folder(dir.path / "val", 2, 2, 100);
  write_shards(dir.file("train"), dir.file("s/train"), {});
  write_shards(dir.file("val"), dir.file("s/val"), {});
  const std::string ckpt = export_file(dir, "resnet18_cifar", 2);
  const auto r = run_dplab("eval --threads 2 --set data.image_size=32 --data 'shards:" +
                               dir.file("s/val-*.tar") + "' --checkpoint " + ckpt,
                           dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("/4)"), std::string::npos) << r.out;  // the 4 val images, not the 7
  EXPECT_EQ(r.err.find("training data"), std::string::npos) << r.err;
}

// The printed probabilities of one image's block: "  1. NAME P" lines.
std::vector<std::pair<std::string, double>> ranked(const std::string& out,
                                                   const std::string& image) {
  std::vector<std::pair<std::string, double>> r;
  std::istringstream in(out.substr(out.find(image + "\n") + image.size() + 1));
  std::string line;
  while (std::getline(in, line) && line.starts_with("  ")) {
    const auto dot = line.find(". "), sp = line.rfind(' ');
    r.push_back({line.substr(dot + 2, sp - dot - 2), std::stod(line.substr(sp + 1))});
  }
  return r;
}

TEST(ModelTools, PredictImagesWithClassNames) {
  ScopedTempDir dir("model-tools-predict");
  write_folder(dir.path / "imgs", 2, 1);
  const std::string named = export_file(dir, "resnet18_cifar", 2, {"cat", "dog"});
  const std::string one = dir.file("imgs/cat/c0.jpg");
  auto r = run_dplab("predict --checkpoint " + named + " " + one, dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("class names: from the checkpoint"), std::string::npos) << r.out;
  auto top = ranked(r.out, one);
  ASSERT_EQ(top.size(), 2u) << r.out;  // --top 5 of a 2-class model: both
  EXPECT_GE(top[0].second, top[1].second);
  EXPECT_NEAR(top[0].second + top[1].second, 1.0, 2e-4);
  std::set<std::string> names = {top[0].first, top[1].first};
  EXPECT_EQ(names, (std::set<std::string>{"cat (0)", "dog (1)"})) << r.out;

  // A folder: every image, sorted; --top 1.
  r = run_dplab("predict --top 1 --checkpoint " + named + " --input " + dir.file("imgs"),
                dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* f : {"imgs/cat/c0.jpg", "imgs/cat/c1.jpg", "imgs/dog/d0.jpg"}) {
    EXPECT_NE(r.out.find(dir.file(f) + "\n"), std::string::npos) << r.out;
    EXPECT_EQ(ranked(r.out, dir.file(f)).size(), 1u) << r.out;
  }
  EXPECT_LT(r.out.find("c1.jpg"), r.out.find("d0.jpg"));

  // No names recorded: --classes FOLDER names them; neither: indices, said so.
  const std::string plain = export_file(dir, "resnet18_cifar", 2);
  r = run_dplab("predict --checkpoint " + plain + " --classes " + dir.file("imgs") + " " + one,
                dir.path / "c");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("class names: from " + dir.file("imgs")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cat (0)"), std::string::npos) << r.out;
  r = run_dplab("predict --checkpoint " + plain + " " + one, dir.path / "d");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("indices"), std::string::npos) << r.out;
  top = ranked(r.out, one);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ((std::set<std::string>{top[0].first, top[1].first}), (std::set<std::string>{"0", "1"}));
}

TEST(ModelTools, PredictRefusesNonImages) {
  ScopedTempDir dir("model-tools-nonimage");
  const std::string ckpt = export_file(dir, "resnet18_cifar", 2);
  std::ofstream(dir.file("notes.JPEG")) << "hello, this is text\n";
  auto r = run_dplab("predict --checkpoint " + ckpt + " " + dir.file("notes.JPEG"), dir.path / "a");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("expected an image (JPEG, PNG"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("found text ('hello, this is text"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("header length"), std::string::npos) << r.err;
  // A safetensors batch without --output: said what to give.
  r = run_dplab("predict --checkpoint " + ckpt + " " + ckpt, dir.path / "b");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("give --output"), std::string::npos) << r.err;
}

TEST(ModelTools, SniffInputByContent) {
  ScopedTempDir dir("model-tools-sniff");
  write_jpeg(dir.path / "x.txt", 1);  // a JPEG whatever its name
  std::string found;
  EXPECT_EQ(sniff_input(dir.file("x.txt"), &found), InputKind::image);
  EXPECT_EQ(found, "a JPEG image");
  save_safetensors(dir.file("b.bin"), {{"input", Tensor::zeros({1, 3, 2, 2})}});
  EXPECT_EQ(sniff_input(dir.file("b.bin")), InputKind::safetensors);
  std::ofstream(dir.file("z.jpg"), std::ios::binary).write("\x00\x01\x02\x03\xff", 5);
  EXPECT_EQ(sniff_input(dir.file("z.jpg"), &found), InputKind::other);
  EXPECT_EQ(found, "binary data starting 00 01 02 03 ff");
}

// Issue #38 item 2: the sniffer read 64 bytes, and libpng needs every chunk before the first
// IDAT to read a PNG's header; a BMP stored top-down (negative height) was refused everywhere.
// The files are written here: a palette PNG (600 bytes of PLTE), a PNG with a text chunk, one
// whose text chunks run past the first MiB (told by its signature), and a top-down BMP.
struct ValidImages {
  std::vector<std::string> png, bmp;
};

ValidImages write_valid_images(const ScopedTempDir& dir) {
  const uint32_t w = 20, h = 12;
  test::Bytes rgb(size_t(w) * h * 3), indices(size_t(w) * h), palette;
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 7);
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = uint8_t(i % 200);
  for (int i = 0; i < 200; ++i) palette.insert(palette.end(), {uint8_t(i), 40, uint8_t(255 - i)});
  test::Bytes text(2000, 'x');
  const char keyword[] = "Comment";  // and its NUL separator
  std::copy(keyword, keyword + sizeof keyword, text.begin());
  test::Bytes long_text = text;
  long_text.resize(size_t(600) << 10, 'z');
  auto write = [&](const std::string& name, const test::Bytes& b) {
    std::ofstream(dir.file(name), std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), std::streamsize(b.size()));
    return dir.file(name);
  };
  ValidImages v;
  v.png.push_back(write("palette.png", test::make_png8(w, h, 3, indices, false, palette)));
  v.png.push_back(write("text.png", test::make_png8(w, h, 2, rgb, false, {}, {{"tEXt", text}})));
  v.png.push_back(
      write("long-text.png",
            test::make_png8(w, h, 2, rgb, true, {}, {{"tEXt", long_text}, {"zTXt", long_text}})));
  v.bmp.push_back(write("top-down.bmp", test::make_bmp24(int(w), int(h), rgb, true)));
  return v;
}

TEST(ModelTools, SniffInputReadsPngAndBmpHeadersWhereverTheyEnd) {
  ScopedTempDir dir("model-tools-sniff-valid");
  const ValidImages v = write_valid_images(dir);
  for (const std::string& f : v.png) {
    std::string found;
    EXPECT_EQ(sniff_input(f, &found), InputKind::image) << f << ": " << found;
    EXPECT_EQ(found, "a PNG image") << f;
  }
  std::string found;
  EXPECT_EQ(sniff_input(v.bmp[0], &found), InputKind::image) << found;
  EXPECT_EQ(found, "a BMP image");
  // A damaged PNG is still an image by its signature: decoding says what is wrong with it.
  test::Bytes bomb = test::png_signature();
  test::png_chunk(bomb, "IHDR", test::png_ihdr(16, 16, 8, 2));
  test::put_be32(bomb, 0x7ffffff0u);
  bomb.insert(bomb.end(), {'t', 'E', 'X', 't', 'a', 'b', 'c'});
  std::ofstream(dir.file("bomb.png"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bomb.data()), std::streamsize(bomb.size()));
  EXPECT_EQ(sniff_input(dir.file("bomb.png"), &found), InputKind::image);
  EXPECT_EQ(found, "a PNG image");
}

TEST(ModelTools, PredictTakesPalettePngTextPngAndTopDownBmp) {
  ScopedTempDir dir("model-tools-predict-valid");
  const ValidImages v = write_valid_images(dir);
  const std::string ckpt = export_file(dir, "resnet18_cifar", 2, {"cat", "dog"});
  std::string inputs;
  for (const auto& f : v.png) inputs += " " + f;
  inputs += " " + v.bmp[0];
  auto r = run_dplab("predict --checkpoint " + ckpt + inputs, dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& f : v.png) EXPECT_EQ(ranked(r.out, f).size(), 2u) << f << "\n" << r.out;
  EXPECT_EQ(ranked(r.out, v.bmp[0]).size(), 2u) << r.out;
  // The top-down BMP is the same image as the PNG of the same pixels: the same probabilities.
  const auto png = ranked(r.out, v.png[1]), bmp = ranked(r.out, v.bmp[0]);
  ASSERT_EQ(png.size(), 2u);
  ASSERT_EQ(bmp.size(), 2u);
  EXPECT_EQ(png[0].first, bmp[0].first);
  EXPECT_NEAR(png[0].second, bmp[0].second, 1e-4);
  // A PNG whose text chunk claims 2 GiB: refused at once, naming the chunk and its offset.
  test::Bytes bomb = test::png_signature();
  test::png_chunk(bomb, "IHDR", test::png_ihdr(16, 16, 8, 2));
  test::put_be32(bomb, 0x7ffffff0u);
  bomb.insert(bomb.end(), {'t', 'E', 'X', 't', 'a', 'b', 'c'});
  std::ofstream(dir.file("bomb.png"), std::ios::binary)
      .write(reinterpret_cast<const char*>(bomb.data()), std::streamsize(bomb.size()));
  r = run_dplab("predict --checkpoint " + ckpt + " " + dir.file("bomb.png"), dir.path / "b");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find(dir.file("bomb.png")), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chunk 'tEXt' at byte 33 declares 2147483632 bytes"), std::string::npos)
      << r.err;
}

TEST(ModelTools, TopKSoftmaxByHand) {
  // softmax(1, 3, 2): e^k / (e + e^3 + e^2) = 0.09003, 0.66524, 0.24473.
  const float logits[3] = {1, 3, 2};
  const auto t = top_k(logits, 3, 2);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].first, 1);
  EXPECT_NEAR(t[0].second, 0.66524, 1e-5);
  EXPECT_EQ(t[1].first, 2);
  EXPECT_NEAR(t[1].second, 0.24473, 1e-5);
  const float tie[2] = {0.5f, 0.5f};  // ties: the lower index first
  EXPECT_EQ(top_k(tie, 2, 1)[0].first, 0);
}

}  // namespace
}  // namespace dplab

namespace dplab {
namespace {

// `dplab train` on an image folder records the model and the class names in final.safetensors;
// eval (on the run directory: its checkpoint's manifest names the model) and predict need no
// --model, and predict prints the folder's class names.
TEST(ModelTools, TrainRecordsModelAndClassNames) {
  ScopedTempDir dir("model-tools-train");
  write_folder(dir.path / "imgs", 2, 2);
  auto r = run_dplab("train --model resnet18_cifar --data folder:" + dir.file("imgs") +
                         " --batch 2 --max-steps 1 --threads 2 --set data.image_size=32 "
                         "--set progress=off --out " +
                         dir.file("run"),
                     dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, std::string> meta;
  load_safetensors(dir.file("run/final.safetensors"), &meta);
  EXPECT_EQ(meta["dplab.model"], "resnet18_cifar");
  EXPECT_EQ(meta["dplab.classes"], R"(["cat","dog"])");
  r = run_dplab("eval --threads 2 --set data.image_size=32 --data folder:" + dir.file("imgs") +
                    " --checkpoint " + dir.file("run"),
                dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("/4)"), std::string::npos) << r.out;
  const std::string one = dir.file("imgs/dog/d1.jpg");
  r = run_dplab("predict --top 1 --checkpoint " + dir.file("run/final.safetensors") + " " + one,
                dir.path / "c");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("class names: from the checkpoint"), std::string::npos) << r.out;
  const auto top = ranked(r.out, one);
  ASSERT_EQ(top.size(), 1u) << r.out;
  EXPECT_TRUE(top[0].first == "cat (0)" || top[0].first == "dog (1)") << r.out;
}

// `dplab shards` end to end: summary counts, bad images listed on stderr, the val split.
TEST(ModelTools, ShardsCommandReportsAndSplits) {
  ScopedTempDir dir("model-tools-shards-cli");
  write_folder(dir.path / "imgs", 5, 5);
  std::ofstream(dir.file("imgs/cat/readme.jpg")) << "this is not an image\n";
  auto r = run_dplab("shards --input " + dir.file("imgs") + " --output " + dir.file("s/ds") +
                         " --per-shard 3 --val-fraction 0.2",
                     dir.path / "a");
  ASSERT_EQ(r.status, 0) << r.err;
  // 10 good images: round(0.2 * 5) = 1 per class into val, 8 into train (3 + 3 + 2).
  EXPECT_NE(
      r.out.find("wrote 8 images of 2 classes into 3 shards; index " + dir.file("s/ds-train.json")),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("validation: 2 images into 1 shards; index " + dir.file("s/ds-val.json")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("skipped 1 bad images (listed on stderr)"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("skipped " + dir.file("imgs/cat/readme.jpg") + ": not a JPEG"),
            std::string::npos)
      << r.err;
  // Brace ranges in shards: evaluate on the val set.
  const std::string ckpt = export_file(dir, "resnet18_cifar", 2);
  r = run_dplab("eval --threads 2 --set data.image_size=32 --data 'shards:" +
                    dir.file("s/ds-train-{000000..000002}.tar") + "' --checkpoint " + ckpt,
                dir.path / "b");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("/8)"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace dplab
