#include "dplab/data/image_folder.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

namespace dplab {

namespace fs = std::filesystem;

bool is_image_extension(const std::string& ext) {
  std::string e = ext;
  for (char& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  for (const char* k : {"jpg", "jpeg", "png", "bmp", "ppm", "pgm", "tga", "gif"})
    if (e == k) return true;
  return false;
}

FolderListing list_image_folder(const std::string& root) {
  DPLAB_CHECK(fs::is_directory(root), "image folder {}: not a directory", root);
  FolderListing l;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) l.classes.push_back(e.path().filename().string());
  std::sort(l.classes.begin(), l.classes.end());
  for (size_t c = 0; c < l.classes.size(); ++c) {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(fs::path(root) / l.classes[c])) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && ext.size() > 1 && is_image_extension(ext.substr(1)))
        files.push_back(e.path().string());
    }
    std::sort(files.begin(), files.end());
    for (auto& f : files) l.files.push_back({std::move(f), int64_t(c)});
  }
  DPLAB_CHECK(!l.files.empty(),
              "image folder {}: no images found (expected <root>/<class>/<file>.jpg|png|...)",
              root);
  return l;
}

std::vector<uint8_t> read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DPLAB_CHECK(in.good(), "cannot open {}", path);
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  DPLAB_CHECK(!in.bad(), "read error on {}", path);
  return bytes;
}

ImageFolderDataset::ImageFolderDataset(const std::string& root, ImageTransformOptions transform,
                                       OnError on_error)
    : EncodedImageDataset(transform, on_error), root_(root), listing_(list_image_folder(root)) {}

std::string ImageFolderDataset::describe() const {
  return fmt::format("image folder {} ({} images, {} classes)", root_, size(), num_classes());
}

std::vector<uint8_t> ImageFolderDataset::read_encoded(int64_t index) const {
  const std::string& path = listing_.files[size_t(index)].path;
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  DPLAB_CHECK(ec || size <= kMaxEncodedImageBytes,
              "{}: {} bytes, more than the {} an image decoder accepts", path, size,
              kMaxEncodedImageBytes);
  return read_whole_file(path);
}

}  // namespace dplab
