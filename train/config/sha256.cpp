#include "dplab/train/config/sha256.h"

#include <nettle/sha2.h>

#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "dplab/core/error.h"

namespace dplab {

// Nettle's SHA-256 (Debian's nettle-dev): a maintained implementation, not one of our own.
std::string sha256_hex(std::string_view bytes) {
  sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, bytes.size(), reinterpret_cast<const uint8_t*>(bytes.data()));
  uint8_t digest[SHA256_DIGEST_SIZE];
  sha256_digest(&ctx, SHA256_DIGEST_SIZE, digest);
  std::string hex;
  for (uint8_t b : digest) hex += fmt::format("{:02x}", b);
  return hex;
}

std::string sha256_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  DPLAB_CHECK(bool(in), "{}: cannot be read for its SHA-256", path);
  std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  DPLAB_CHECK(!in.bad(), "{}: read error while computing its SHA-256", path);
  return sha256_hex(std::string_view(data.data(), data.size()));
}

}  // namespace dplab
