// `dplab shards --input DIR --output PREFIX --per-shard N [--seed S]`: packs an image folder
// (<class>/<file>) into shuffled WebDataset tar shards plus an index file PREFIX.json.
#include <iostream>

#include "dplab/data/shards.h"
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {
namespace {
struct ShardsArgs {
  std::string input, output;
  int64_t per_shard = 1000;
  uint64_t seed = 0;
};
}  // namespace

CommandSpec shards_command() {
  return {"shards", [](CLI::App& app) -> Action {
            auto a = std::make_shared<ShardsArgs>();
            CLI::App* c = app.add_subcommand(
                "shards",
                "pack an image folder (<class>/<file>) into shuffled tar shards "
                "(key.jpg + key.cls, WebDataset layout) and an index PREFIX.json");
            c->add_option("--input", a->input, "image folder root")->required();
            c->add_option("--output", a->output, "shard prefix: writes PREFIX-000000.tar, ...")
                ->required();
            c->add_option("--per-shard", a->per_shard, "images per shard")
                ->default_val(1000)
                ->check(CLI::PositiveNumber);
            c->add_option("--seed", a->seed, "shuffle seed")->default_val(0);
            return [a]() {
              ShardWriteOptions o;
              o.per_shard = a->per_shard;
              o.seed = a->seed;
              const ShardWriteResult r = write_shards(a->input, a->output, o);
              int64_t total = 0;
              for (int64_t n : r.counts) total += n;
              std::cout << fmt::format("wrote {} images of {} classes into {} shards; index {}\n",
                                       total, r.classes.size(), r.shard_paths.size(), r.index_path);
              return 0;
            };
          }};
}

}  // namespace dplab::cli
