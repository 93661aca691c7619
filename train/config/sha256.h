// SHA-256 (FIPS 180-4, through nettle) of a file, for the run record's plugin checksums
// (train/config/plugin_loader.h): the lowercase hex digest that `sha256sum` prints.
#pragma once
#include <string>
#include <string_view>

namespace dplab {

// The digest of `bytes`, 64 lowercase hex digits.
std::string sha256_hex(std::string_view bytes);
// The digest of the file at `path`; throws dplab::Error naming the file when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace dplab
