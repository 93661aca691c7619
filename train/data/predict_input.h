// What `dplab predict` reads: image files and folders of them (decoded by data/decode.h, shaped
// for the model), a safetensors batch, or anything else (refused with what it is and what was
// expected); and the top-k classes of a row of logits.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dplab/core/tensor.h"

namespace dplab {

enum class InputKind { image, safetensors, other };

// The kind of file `path` is, by its first bytes (never by its name); `found` (when not null)
// gets a few words on what it is ("JPEG image", "text", "binary data starting 00 01 ...").
InputKind sniff_input(const std::string& path, std::string* found = nullptr);

// The image files `inputs` name: files as given (each must be an image: otherwise an error
// saying what it is and what was expected), folders searched recursively for files with an image
// extension, in sorted order. Throws if there are none.
std::vector<std::string> collect_images(const std::vector<std::string>& inputs);

// One image shaped for a model taking `sample_shape` = {C, H, W}: 3 channels get the evaluation
// transform (Resize to H * 256 / 224, CenterCrop H, ImageNet normalisation) that `dplab train`
// applies to shards:/folder: data; 1 channel (MNIST-style models) gets the whole image resized
// to H x W, greyscale in [0, 1] (as IDX pixels / 255). Returns [C, H, W].
Tensor image_for_model(const std::string& path, const Shape& sample_shape, int64_t max_pixels);

// The `k` largest softmax probabilities of `logits` (one row, `classes` values), best first, as
// (class index, probability); ties go to the lower index.
std::vector<std::pair<int, double>> top_k(const float* logits, int classes, int k);

}  // namespace dplab
