// `dplab predict`: a checkpoint's top-k classes for image files and folders, or (with a
// .safetensors batch holding tensor `input` [N, C, H, W] and --output) its eval-mode logits as
// tensor `logits` [N, classes], used to check that a checkpoint gives the same outputs in dplab
// and PyTorch (tools/scripts/resnet_roundtrip.py). The model is --model, else the one the
// checkpoint records (train/state/model_file.h).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "dplab/core/autograd.h"
#include "dplab/core/safetensors.h"
#include "dplab/data/decode.h"
#include "dplab/data/image_folder.h"
#include "dplab/data/shards.h"
#include "dplab/models/registry.h"
#include "dplab/tools/dplab/command.h"
#include "dplab/train/data/predict_input.h"
#include "dplab/train/loop/trainer.h"
#include "dplab/train/state/model_file.h"

namespace dplab::cli {
namespace {
struct PredictArgs {
  std::string model, checkpoint, output, classes;
  std::vector<std::string> inputs;
  int top = 5;
  int image_size = 0;
  int threads = 0;  // 0: OpenMP's default (every core)
};

Tensor read_input(const std::string& path) {
  for (auto& nt : load_safetensors(path))
    if (nt.name == "input") {
      DPLAB_CHECK(nt.tensor.dim() == 4, "{}: tensor 'input' must be [N, C, H, W], got {}", path,
                  nt.tensor.str());
      return nt.tensor.dtype() == DType::f32 ? nt.tensor : nt.tensor.to(DType::f32);
    }
  DPLAB_FAIL("{}: no tensor named 'input'", path);
}

// Class names from --classes: an image folder (its class directories; DIR/train when it has
// train/ and val/), a shard index PREFIX.json, or a shards glob (the index beside them).
std::vector<std::string> classes_from(const std::string& src) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(src, ec))
    return list_image_folder(fs::is_directory(src + "/train", ec) ? src + "/train" : src).classes;
  if (src.ends_with(".json")) {
    std::ifstream in(src);
    DPLAB_CHECK(in.good(), "--classes {}: cannot open", src);
    try {
      return nlohmann::json::parse(in).at("classes").get<std::vector<std::string>>();
    } catch (const std::exception& e) {
      DPLAB_FAIL("--classes {}: expected a shard index (JSON with a 'classes' array of names): {}",
                 src, e.what());
    }
  }
  const std::string glob = src.starts_with("shards:") ? src.substr(7) : src;
  auto names = shard_index_classes(expand_glob(glob).front());
  DPLAB_CHECK(!names.empty(), "--classes {}: no shard index (PREFIX.json) beside the shards", src);
  return names;
}

// A ResNet's input channels as the file's first convolution has them (1 for a model trained on
// Fashion-MNIST); -1 (the model's own) for other models, whose mismatch the load reports.
int stem_channels(const std::string& model_name, const ModelWeights& w) {
  return model_info(model_name).any_channels ? channels_in_file(w) : -1;
}

int predict_images(const PredictArgs& a, const ModelWeights& w, const std::string& model_name) {
  const std::vector<std::string> images = collect_images(a.inputs);
  const int file_classes = classes_in_file(w);
  auto model = make_model(model_name, 0, file_classes, false, stem_channels(model_name, w));
  load_model_file(w, *model, model_name);
  model->eval();
  Shape shape = model_info(model_name).input_shape;
  if (const int c = stem_channels(model_name, w); c > 0) shape[0] = c;  // grey-scale ResNet: 1
  if (a.image_size > 0) shape[1] = shape[2] = a.image_size;

  std::vector<std::string> names = class_names_in_file(w);
  std::string source = "from the checkpoint (dplab.classes)";
  if (names.empty() && !a.classes.empty()) {
    names = classes_from(a.classes);
    source = "from " + a.classes;
  }
  if (names.empty())
    source = "none (the checkpoint records none; give --classes FOLDER|INDEX.json): indices";
  std::cout << "class names: " << source << "\n";

  NoGradGuard no_grad;
  for (const std::string& path : images) {
    Tensor x = image_for_model(path, shape, kDefaultMaxImagePixels);
    Tensor logits = model->forward(x.view({1, shape[0], shape[1], shape[2]})).contiguous();
    const int classes = int(logits.size(1));
    DPLAB_CHECK(names.empty() || int(names.size()) == classes,
                "class names {}: {} names for a model with {} classes", source, names.size(),
                classes);
    std::cout << path << "\n";
    int rank = 1;
    for (const auto& [c, p] : top_k(logits.data<float>(), classes, a.top))
      std::cout << fmt::format(
          "  {}. {} {:.4f}\n", rank++,
          names.empty() ? std::to_string(c) : fmt::format("{} ({})", names[size_t(c)], c), p);
  }
  return 0;
}
}  // namespace

CommandSpec predict_command() {
  return {
      "predict", [](CLI::App& app) -> Action {
        auto a = std::make_shared<PredictArgs>();
        CLI::App* c = app.add_subcommand(
            "predict",
            "top-k classes of a checkpoint for image files or folders; or eval-mode logits "
            "for a safetensors batch (--output)");
        c->add_option("--model", a->model, "model name (default: the one the checkpoint records)");
        c->add_option("--checkpoint", a->checkpoint,
                      "weights .safetensors (PyTorch names), or a checkpoint or run directory")
            ->required();
        c->add_option("inputs,--input", a->inputs,
                      "image files (JPEG, PNG, ...) or folders of them; or one .safetensors "
                      "holding tensor 'input' [N,C,H,W] (with --output)")
            ->required();
        c->add_option("--output", a->output,
                      ".safetensors to write tensor 'logits' to (safetensors input only)");
        c->add_option("--top", a->top, "classes printed per image")
            ->default_val(5)
            ->check(CLI::PositiveNumber);
        c->add_option("--classes", a->classes,
                      "class names when the checkpoint records none: an image folder, a "
                      "shard index PREFIX.json, or a shards glob");
        c->add_option("--image-size", a->image_size,
                      "image side fed to the model (default: the model's input size)")
            ->check(CLI::PositiveNumber);
        c->add_option("--threads", a->threads, "OpenMP threads (0: every core)")
            ->default_val(0)
            ->check(CLI::NonNegativeNumber);
        return [a]() {
          apply_thread_option(a->threads);
          const ModelWeights w = read_model_weights(a->checkpoint);
          const std::string model_name = model_for_file(a->model, w);
          const bool batch = a->inputs.size() == 1 &&
                             !std::filesystem::is_directory(a->inputs[0]) &&
                             sniff_input(a->inputs[0]) == InputKind::safetensors;
          if (!batch) {
            DPLAB_CHECK(a->output.empty(),
                        "--output {}: logits are written for a .safetensors input batch only; "
                        "image inputs print their top classes",
                        a->output);
            return predict_images(*a, w, model_name);
          }
          DPLAB_CHECK(!a->output.empty(),
                      "{}: a safetensors batch: give --output FILE for its logits", a->inputs[0]);
          auto model =
              make_model(model_name, 0, classes_in_file(w), false, stem_channels(model_name, w));
          load_model_file(w, *model, model_name);
          model->eval();
          NoGradGuard no_grad;
          Tensor logits = model->forward(read_input(a->inputs[0]));
          save_safetensors(a->output, {{"logits", logits}}, {{"model", model_name}});
          std::cout << fmt::format("wrote logits {} to {}\n", shape_str(logits.shape()), a->output);
          return 0;
        };
      }};
}

}  // namespace dplab::cli
