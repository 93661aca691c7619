#include "dplab/train/data/data_options.h"

namespace dplab {

const OptionTable& data_option_table() {
  static const OptionTable t({
      {"data", "fashion-mnist",
       "dataset: fashion-mnist, mnist (the standard 60k/10k IDX files), mnist-10k (the "
       "10,000-digit "
       "subset), each as NAME or NAME:DIR; shards:GLOB (WebDataset tar shards; {000000..000099} "
       "ranges) or folder:DIR (<class>/<file> images; DIR/train + DIR/val if present)",
       text()},
      {"data.val", "", "evaluation data for shards:/folder: (shards:GLOB or folder:DIR)", text(),
       false},
      {"data.image_size", "224", "shards:/folder: image side after cropping", integer(1)},
      {"data.on_error", "skip", "shards:/folder: damaged sample: skip (report, count) or fail",
       choice({"skip", "fail"})},
      {"data.num_classes", "0",
       "number of classes; every label must be below it (a larger one is a damaged sample). 0: "
       "the shard index's class list, the folder's class directories, 10 for IDX data; shard "
       "labels without an index must then be below 100000",
       integer(0, 16777216)},
      {"data.max_image_pixels", "67108864",
       "shards:/folder: images with more pixels (width x height, read from the header) are "
       "damaged samples, refused before decoding; the default, 64 Mpixel, decodes to at most "
       "192 MiB",
       integer(1)},
      {"data.shuffle_buffer", "1000", "shards: shuffle buffer size (samples)", integer(0)},
      {"data.dir", "",
       "directory with the IDX files (default: $DPLAB_DATA/<data>, then the "
       "dataset's standard location)",
       text(), false},
      {"data.train_limit", "0", "use only the first N training samples (0: all)", integer(0)},
      {"data.test_limit", "0", "use only the first N test samples (0: all)", integer(0), false},
      {"data.workers", "0",
       "loader worker threads of training and evaluation (0: load on the training thread)",
       integer(0), false},
      {"data.prefetch", "4", "batches the workers build ahead", integer(0), false},
      {"eval.batch", "0",
       "batch size of evaluation per rank (0: train: the per-rank training batch, so evaluation "
       "needs no more memory than a step; eval: from the image size; both at most 2^22 input "
       "values: 1024 for 28 x 28, 16 for 3 x 224 x 224; train/data/evaluate.h)",
       integer(0), false},
  });
  return t;
}

}  // namespace dplab
