// What it shows: an experiment's own dataset and model given to the full training driver. A
// `Dataset` subclass reads a CSV of features and a label per line; a DatasetEntry registers it
// under the prefix "csv:" (data=csv:DIR reads DIR/train.csv and DIR/test.csv), and a small MLP
// is registered as "mlp". Ranks, metrics, checkpoints and evaluation are the driver's.
//
//   ./csv_dataset make-data DIR       writes two interleaved half-moons (2 features, 2 classes)
//   mpiexec -n 2 ./csv_dataset data=csv:DIR epochs=5 out=runs/moons    (algo=allreduce by default)
//
// A malformed line stops the run naming FILE:LINE, what was expected and what was found.
#include <charconv>
#include <cmath>
#include <fstream>
#include <random>

#include "dplab/layers/linear.h"
#include "dplab/layers/relu.h"
#include "dplab/layers/sequential.h"
#include "dplab/train/loop/experiment_main.h"

namespace {

using namespace dplab;

// Lines "x1,...,xD,label" (D the same on every line; '#' lines and blank lines are skipped).
class CsvDataset : public Dataset {
 public:
  explicit CsvDataset(const std::string& path) : path_(path) {
    std::ifstream in(path);
    DPLAB_CHECK(in.good(), "{}: cannot open the file", path);
    std::string line;
    for (int64_t no = 1; std::getline(in, line); ++no) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> f;
      for (size_t a = 0, b; a <= line.size(); a = b + 1)
        f.push_back(line.substr(a, (b = std::min(line.find(',', a), line.size())) - a));
      if (dim_ == 0) dim_ = int64_t(f.size()) - 1;
      DPLAB_CHECK(dim_ >= 1 && int64_t(f.size()) == dim_ + 1,
                  "{}:{}: expected {} comma-separated fields ({} features and a label), found {}",
                  path, no, std::max<int64_t>(dim_, 1) + 1, std::max<int64_t>(dim_, 1), f.size());
      for (int64_t j = 0; j < dim_; ++j) {
        float v = 0;
        auto r = std::from_chars(f[j].data(), f[j].data() + f[j].size(), v);
        DPLAB_CHECK(r.ec == std::errc() && r.ptr == f[j].data() + f[j].size() && std::isfinite(v),
                    "{}:{}: feature {}: expected a finite number, found '{}'", path, no, j + 1,
                    f[j]);
        x_.push_back(v);
      }
      int64_t label = -1;
      auto r = std::from_chars(f.back().data(), f.back().data() + f.back().size(), label);
      DPLAB_CHECK(r.ec == std::errc() && r.ptr == f.back().data() + f.back().size() && label >= 0,
                  "{}:{}: label: expected an integer >= 0, found '{}'", path, no, f.back());
      y_.push_back(label);
      classes_ = std::max<int>(classes_, int(label) + 1);
    }
    DPLAB_CHECK(!y_.empty(), "{}: no samples (expected lines \"x1,...,xD,label\")", path);
  }
  int64_t size() const override { return int64_t(y_.size()); }
  Shape sample_shape() const override { return {dim_}; }
  int num_classes() const override { return classes_; }
  std::string describe() const override { return "csv:" + path_; }
  int64_t get_into(int64_t i, float* out) const override {
    std::copy_n(x_.begin() + i * dim_, dim_, out);
    return y_[size_t(i)];
  }

 private:
  std::string path_;
  int64_t dim_ = 0;
  int classes_ = 0;
  std::vector<float> x_;
  std::vector<int64_t> y_;
};

// Two interleaved half-moons with Gaussian noise (sd 0.1): class 0 on the upper arc, class 1 on
// the lower one, shifted; not linearly separable, but an MLP separates them.
void write_moons(const std::string& path, int n, uint32_t seed) {
  std::ofstream out(path);
  DPLAB_CHECK(out.good(), "{}: cannot write", path);
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> t(0, M_PI);
  std::normal_distribution<double> noise(0, 0.1);
  out << "# x,y,class\n";
  for (int i = 0; i < n; ++i) {
    const int c = i % 2;
    const double a = t(gen);
    const double x = c == 0 ? std::cos(a) : 1 - std::cos(a),
                 y = c == 0 ? std::sin(a) : 0.5 - std::sin(a);
    out << fmt::format("{:.6f},{:.6f},{}\n", x + noise(gen), y + noise(gen), c);
  }
}

std::shared_ptr<Module> make_mlp(int classes) {
  auto s = std::make_shared<Sequential>();
  s->push_back(std::make_shared<Linear>(2, 32));
  s->push_back(std::make_shared<ReLU>());
  s->push_back(std::make_shared<Linear>(32, 32));
  s->push_back(std::make_shared<ReLU>());
  s->push_back(std::make_shared<Linear>(32, classes));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "make-data") {
    write_moons(std::string(argv[2]) + "/train.csv", 2000, 1);
    write_moons(std::string(argv[2]) + "/test.csv", 500, 2);
    return 0;
  }
  Registry registry = Registry::with_builtins();
  registry.add(DatasetEntry{"csv:",
                            "csv:DIR: DIR/train.csv and DIR/test.csv, lines x1,...,xD,label",
                            {},
                            [](const std::string& spec, const Options&) {
                              const std::string dir = spec.substr(4);
                              return TrainData{std::make_shared<CsvDataset>(dir + "/train.csv"),
                                               std::make_shared<CsvDataset>(dir + "/test.csv")};
                            }});
  registry.add_model("mlp", {2}, 2, make_mlp, "2 -> 32 -> 32 -> classes, ReLU");
  Options defaults;
  defaults.set("model", "mlp");
  defaults.set("algo", "allreduce");
  defaults.set("lr", "0.1");
  defaults.set("momentum", "0.9");
  defaults.set("batch", "32");
  return experiment_main(
      argc, argv, registry,
      {"csv_dataset", "A CSV dataset and an MLP (make-data DIR writes one).", defaults});
}
