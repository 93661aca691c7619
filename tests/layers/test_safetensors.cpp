// safetensors checkpoints: round trip of every dtype, the byte layout of the format, and the
// validation errors on corrupted files (each written by hand here).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/harness.h"
#include "dplab/core/safetensors.h"

namespace dplab {
namespace {

std::string tmp_path(const std::string& name) {
  return testing::TempDir() + "/" + name;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A file with the given header text (length-prefixed) and data bytes.
void write_raw(const std::string& path, const std::string& header, const std::string& data) {
  std::ofstream f(path, std::ios::binary);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>((n >> (8 * i)) & 0xff));
  f << header << data;
}

std::string load_error(const std::string& path) {
  try {
    load_safetensors(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, RoundTripEveryDtype) {
  std::vector<NamedTensor> ts = {
      {"f32", Tensor::from_vector({1.5f, -2.f, 3.25f, 1e-30f, -0.f, 7.f}, {2, 3})},
      {"bf16", Tensor::from_vector({1.f, -2.5f, 1024.f}, {3}, DType::bf16)},
      {"f16", Tensor::from_vector({0.5f, -65504.f, 6e-8f, 3.f}, {2, 2}, DType::f16)},
      {"i32", Tensor::from_vector({-7, 0, 2147483520.f}, {3}, DType::i32)},
      {"i64", Tensor::from_vector_i64({-(int64_t(1) << 40), 1, 42}, {3, 1})},
      {"u8", Tensor::from_vector({0, 255, 17}, {3}, DType::u8)},
      {"scalar", Tensor::from_vector_i64({12}, {})},
      {"empty", Tensor::zeros({0, 4})},
      // A strided view is written as its contiguous values.
      {"view", Tensor::from_vector({0, 1, 2, 3, 4, 5}, {2, 3}).transpose(0, 1)},
  };
  const std::string path = tmp_path("roundtrip.safetensors");
  save_safetensors(path, ts, {{"format", "pt"}, {"epoch", "3"}});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  std::map<std::string, std::string> md;
  auto back = load_safetensors(path, &md);
  EXPECT_EQ(md, (std::map<std::string, std::string>{{"format", "pt"}, {"epoch", "3"}}));
  ASSERT_EQ(back.size(), ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor a = ts[i].tensor.contiguous(), b = back[i].tensor;
    EXPECT_EQ(back[i].name, ts[i].name);  // file order is the given order
    EXPECT_EQ(b.dtype(), a.dtype()) << ts[i].name;
    EXPECT_EQ(b.shape(), a.shape()) << ts[i].name;
    ASSERT_EQ(b.nbytes(), a.nbytes()) << ts[i].name;
    EXPECT_EQ(0, std::memcmp(a.raw_data(), b.raw_data(), a.nbytes())) << ts[i].name;
  }
  EXPECT_EQ(back[8].tensor.to_vector(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
}

TEST(Safetensors, ByteLayoutFollowsTheFormat) {
  const std::string path = tmp_path("layout.safetensors");
  save_safetensors(path, {{"a", Tensor::from_vector({1.f, 2.f}, {2})},
                          {"b", Tensor::from_vector_i64({3}, {1})}});
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u) << "header padded to a multiple of 8";
  ASSERT_EQ(bytes.size(), 8 + n + 8 + 8);
  const std::string header = bytes.substr(8, n);
  EXPECT_EQ(header.substr(0, header.find_last_not_of(' ') + 1),
            R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("b":{"dtype":"I64","shape":[1],"data_offsets":[8,16]}})");
  float f[2];
  std::memcpy(f, bytes.data() + 8 + n, 8);
  EXPECT_EQ(f[0], 1.f);
  EXPECT_EQ(f[1], 2.f);
}

TEST(Safetensors, ReadsAHandWrittenFileAndOrdersByOffset) {
  // Tensors listed out of data order, no padding, as other writers may produce.
  const std::string path = tmp_path("hand.safetensors");
  int32_t i = 77;
  float x[2] = {0.25f, -4.f};
  std::string data(reinterpret_cast<char*>(x), 8);
  data.append(reinterpret_cast<char*>(&i), 4);
  write_raw(path,
            R"({"z":{"dtype":"I32","shape":[],"data_offsets":[8,12]},)"
            R"("y":{"dtype":"F32","shape":[1,2],"data_offsets":[0,8]}})",
            data);
  auto t = load_safetensors(path);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "y");
  EXPECT_EQ(t[0].tensor.to_vector(), (std::vector<float>{0.25f, -4.f}));
  EXPECT_EQ(t[1].name, "z");
  EXPECT_EQ(t[1].tensor.shape(), Shape{});
  EXPECT_EQ(t[1].tensor.item(), 77.f);
}

TEST(Safetensors, SaveReplacesAtomicallyAndReportsUnwritablePaths) {
  const std::string path = tmp_path("replace.safetensors");
  save_safetensors(path, {{"a", Tensor::zeros({100})}});
  save_safetensors(path, {{"b", Tensor::ones({2})}});
  auto t = load_safetensors(path);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].name, "b");
  try {
    save_safetensors("/nonexistent-dir/x.safetensors", {{"a", Tensor::zeros({1})}});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent-dir/x.safetensors.tmp"), std::string::npos);
  }
  EXPECT_THROW(save_safetensors(path, {{"a", Tensor::zeros({1})}, {"a", Tensor::zeros({1})}}),
               Error);
  EXPECT_THROW(save_safetensors(path, {{"__metadata__", Tensor::zeros({1})}}), Error);
}

struct BadFile {
  const char* name;
  std::string header;
  std::string data;
  const char* expected;  // a substring of the error
};

TEST(Safetensors, CorruptedFilesGiveErrorsNamingFileAndProblem) {
  const std::string d8(8, '\0');
  const std::vector<BadFile> cases = {
      {"bad_json", R"({"a":{"dtype":"F32",)", d8, "bad JSON header"},
      {"not_object", R"([1,2])", d8, "not an object"},
      {"unknown_dtype", R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})", d8,
       "unsupported dtype 'F64'"},
      {"size_mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d8, "span 8"},
      {"out_of_range", R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d8,
       "out of range"},
      {"reversed", R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", d8, "begin > end"},
      {"overlap",
       R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
       R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       d8, "overlap"},
      {"hole", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", d8,
       "belong to no tensor"},
      {"trailing", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d8, "cover 4"},
      {"negative_dim", R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", d8,
       "invalid dimension"},
      // Beside a zero dimension the element count is 0 whatever the others are; they must
      // still fit an int64 shape and its byte strides ([0, 2^64-1] used to load as
      // shape [0, -1]); so must their product, each alone being small (2^31 * 2^31 elements
      // of up to 8 bytes exceed 2^63).
      {"huge_dim_beside_zero",
       R"({"a":{"dtype":"F32","shape":[0,18446744073709551615],"data_offsets":[0,0]}})", "",
       "impossibly large: dimension 18446744073709551615"},
      {"huge_dims_beside_zero",
       R"({"a":{"dtype":"U8","shape":[0,2147483648,2147483648],"data_offsets":[0,0]}})", "",
       "impossibly large: dimension 2147483648 in shape [0,2147483648,2147483648]"},
      {"missing_offsets", R"({"a":{"dtype":"F32","shape":[2]}})", d8, "data_offsets"},
      {"extra_field", R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", d8,
       "unknown field 'x'"},
      {"metadata_not_string",
       R"({"__metadata__":{"epoch":3},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", d8,
       "not a string"},
  };
  for (const BadFile& c : cases) {
    const std::string path = tmp_path(std::string(c.name) + ".safetensors");
    write_raw(path, c.header, c.data);
    const std::string e = load_error(path);
    EXPECT_NE(e.find(path), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.name << ": " << e;
  }
}

TEST(Safetensors, TruncatedFiles) {
  const std::string good = tmp_path("good.safetensors");
  save_safetensors(good, {{"w", test::random_tensor({64}, 1)}});
  const std::string bytes = read_file(good);
  struct Cut {
    size_t keep;
    const char* expected;
  };
  for (Cut c : {Cut{0, "fewer than the 8-byte"}, Cut{5, "fewer than the 8-byte"},
                Cut{20, "header length"}, Cut{bytes.size() - 1, "out of range"}}) {
    const std::string path = tmp_path("cut.safetensors");
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(bytes.data(), static_cast<std::streamsize>(c.keep));
    }
    const std::string e = load_error(path);
    EXPECT_NE(e.find("truncated"), std::string::npos) << c.keep << ": " << e;
    EXPECT_NE(e.find(c.expected), std::string::npos) << c.keep << ": " << e;
  }
  EXPECT_NE(load_error(tmp_path("does-not-exist.safetensors")).find("cannot open"),
            std::string::npos);
}

}  // namespace
}  // namespace dplab
