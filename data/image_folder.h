// torchvision ImageFolder layout: <root>/<class>/<file>, classes sorted by name -> index 0..,
// files sorted by name within a class; only files with an image extension are samples.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "dplab/data/image_dataset.h"

namespace dplab {

struct ImageFile {
  std::string path;
  int64_t label = 0;
};

struct FolderListing {
  std::vector<std::string> classes;
  std::vector<ImageFile> files;  // class by class, sorted
};

// Throws if `root` is not a directory or holds no class directory with images.
FolderListing list_image_folder(const std::string& root);
// Lower-case extensions (without the dot) of files read as images.
bool is_image_extension(const std::string& ext);

class ImageFolderDataset : public EncodedImageDataset {
 public:
  ImageFolderDataset(const std::string& root, ImageTransformOptions transform,
                     OnError on_error = OnError::skip);
  int64_t size() const override { return int64_t(listing_.files.size()); }
  int num_classes() const override { return int(listing_.classes.size()); }
  std::string describe() const override;
  std::vector<uint8_t> read_encoded(int64_t index) const override;
  int64_t label(int64_t index) const override { return listing_.files[size_t(index)].label; }
  std::string sample_name(int64_t index) const override {
    return listing_.files[size_t(index)].path;
  }
  const FolderListing& listing() const { return listing_; }

 private:
  std::string root_;
  FolderListing listing_;
};

// The whole file as bytes (throws with the path on failure).
std::vector<uint8_t> read_whole_file(const std::string& path);

}  // namespace dplab
