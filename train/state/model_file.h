// A model file as `dplab eval` and `dplab predict` meet it: which model it records, which model
// to build for it, and a strict load whose failure says in one message what the file holds.
#pragma once
#include <string>
#include <vector>

#include "dplab/train/state/checkpoint.h"

namespace dplab {

class Dataset;
class Module;

// "FILE holds model 'resnet18' (122 tensors)" or "FILE records no model name (no dplab.model
// metadata) and holds 8 tensors (conv1.weight, ...)".
std::string describe_model_file(const ModelWeights& w);

// The model to build: `given` (the --model flag) when not empty, else the one the file records;
// neither: an error saying what the file holds and asking for --model.
std::string model_for_file(const std::string& given, const ModelWeights& w);

// The class count of the file's head: its last 2-d `.weight` tensor's rows (-1: none, or a
// `.bias` beside it of another length: then a mismatch is the load's to report).
int classes_in_file(const ModelWeights& w);
// The input channels of the file's first convolution (the first 4-D weight, [out, in, kh, kw]),
// or -1 when it has none: a ResNet trained on 1-channel data is rebuilt with a 1-channel stem.
int channels_in_file(const ModelWeights& w);

// Class names recorded in the file (dplab.classes, a JSON array of strings), or {}.
std::vector<std::string> class_names_in_file(const ModelWeights& w);

// Loads `w` into `model` (built as `model_name`), strictly. A file that does not fit (missing,
// unexpected or differently shaped tensors) fails with one message: what the file holds, the
// counts, and the first few names of each kind.
void load_model_file(const ModelWeights& w, Module& model, const std::string& model_name);

// The class names of an image dataset (folder classes, or the class list of a shard index),
// {} for others.
std::vector<std::string> dataset_class_names(const Dataset& d);

}  // namespace dplab
