// `dplab bench loader`: how many images per second one process's data loader delivers for
// ImageNet-style training: the same datasets (ImageFolderDataset, ShardDataset), transform
// (RandomResizedCrop + flip + ToTensor + Normalize, data/transforms.h) and BatchLoader that
// `dplab train` builds for `data = folder:DIR | shards:GLOB`, timed over a fixed set of images
// with N worker threads; with --compare-torchvision, torchvision's ImageFolder (or a tar-member
// Dataset for shards) + DataLoader with N worker processes on the same images in the same order
// (tools/bench/torchvision_loader.py), and the ratio.
#pragma once
#include <CLI/CLI.hpp>

#include "dplab/tools/dplab/command.h"

namespace dplab::cli {

// Adds the `loader` subcommand to `bench`; the action runs it.
Action add_loader_bench(CLI::App& bench);

}  // namespace dplab::cli
