// safetensors files (https://github.com/huggingface/safetensors format): an 8-byte little-endian
// header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then
// the raw little-endian data. Checkpoints use PyTorch parameter names, so torchvision loads them.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "dplab/core/param_arena.h"

namespace dplab {

// Writes tensors (any device; copied to host) in the given order. Atomic: writes path.tmp,
// fsyncs it, then renames, so a crash never leaves a half-written file under `path`; a failed
// write removes path.tmp. (Syncing the directory is the caller's: train/state/checkpoint.h.)
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// Reads every tensor (CPU). Errors name the file and what is wrong (bad header, offsets out of
// range, truncated data, unknown dtype).
std::vector<NamedTensor> load_safetensors(const std::string& path,
                                          std::map<std::string, std::string>* metadata = nullptr);

}  // namespace dplab
