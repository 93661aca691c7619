// Config files as untrusted input (issue #16): a 50,000-level TOML table overflowed the stack
// inside toml++; now nesting is measured on the text and bounded before parsing, and oversized
// files are refused. Depths below are counted by hand from each document.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <string>

#include "data/temp_dir.h"
#include "dplab/data/decode.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/toml_nesting.h"

namespace dplab {
namespace {

std::string repeat(const std::string& s, int n) {
  std::string r;
  for (int i = 0; i < n; ++i) r += s;
  return r;
}

// The UsageError message of loading `text`, or "" when it loads.
std::string load_error(const std::string& text) {
  Options o;
  try {
    load_toml_string(text, "deep.toml", o);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigLimits, NestingIsMeasuredOnTheText) {
  EXPECT_EQ(toml_nesting("a = 1\n", 100).depth, 1);
  EXPECT_EQ(toml_nesting("[a.b]\nc = [1, 2]\n", 100).depth, 4);  // a, b, c, element
  EXPECT_EQ(toml_nesting("x = {y.z = [{w = 1}]}\n", 100).depth, 5);
  EXPECT_EQ(toml_nesting("[[runs]]\nlr = 0.1\n", 100).depth, 3);  // array, element, key
  EXPECT_EQ(toml_nesting("m = [\n  [1, 2], # [[[\n  [3],\n]\n", 100).depth, 3);
  // Brackets and dots inside strings and comments are not structure.
  EXPECT_EQ(toml_nesting("s = \"[[[{{a.b.c\\\" [[\"\n# [[[ x.y.z = 1\n", 100).depth, 1);
  EXPECT_EQ(toml_nesting("s = '''\n[[[ a.b.c = [[[ '''\nt = \"\"\"x\n\"[[\" \"\"\"\n", 100).depth,
            1);
  EXPECT_EQ(toml_nesting("\"a.b.c\".'d.e' = 1\n", 100).depth, 2);
  const TomlNesting n = toml_nesting("a = 1\n\n  b.c.d = 2\n", 2);
  EXPECT_TRUE(n.exceeded);
  EXPECT_EQ(n.depth, 3);
  EXPECT_EQ(n.line, 3u);
}

TEST(ConfigLimits, FiftyThousandLevelsAreRefusedBeforeParsing) {
  const int n = 50000;
  const std::string header = fmt::format("[{}a]\nx = 1\n", repeat("a.", n - 1));
  std::string msg = load_error(header);
  EXPECT_NE(msg.find("deep.toml:1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("exceed the limit of " + std::to_string(kMaxTomlDepth)), std::string::npos)
      << msg;
  const std::string dotted = "lr = 0.1\n" + repeat("a.", n - 1) + "a = 1\n";
  msg = load_error(dotted);
  EXPECT_NE(msg.find("deep.toml:2:"), std::string::npos) << msg;
  EXPECT_FALSE(load_error("a = " + repeat("[", n) + repeat("]", n) + "\n").empty());
  EXPECT_FALSE(load_error("a = " + repeat("{b = ", n) + "1" + repeat("}", n) + "\n").empty());
  // Unterminated: still measured, still refused.
  EXPECT_FALSE(load_error("a = " + repeat("[", n)).empty());
}

TEST(ConfigLimits, SyntaxTomlAssertsOnIsRefusedFirst) {
  // toml++ 3.3 asserts on these instead of reporting them (found by mutating a config).
  EXPECT_NE(load_error("a = 1\n[$r]\n").find("deep.toml:2:2: expected a key"), std::string::npos)
      << load_error("a = 1\n[$r]\n");
  EXPECT_NE(load_error("[$r]\n").find("found '$'"), std::string::npos);
  EXPECT_NE(load_error("[[ #x]]\n").find("deep.toml:1:4:"), std::string::npos);
  EXPECT_NE(load_error("[ \n").find("found the end of the line"), std::string::npos);
  EXPECT_NE(load_error("[").find("found the end of the file"), std::string::npos);
  EXPECT_NE(load_error("m = [1, [2, {a.b = [}]]\n")
                .find("deep.toml:1:21: expected an array element or ']', found '}'"),
            std::string::npos)
      << load_error("m = [1, [2, {a.b = [}]]\n");
  EXPECT_NE(load_error("a = [\n}]\n").find("deep.toml:2:1:"), std::string::npos);
  // Non-ASCII outside strings and comments (undefined behaviour inside toml++ 3.3).
  for (const char* bad : {"\xc3\xa9 = 1\n", "a.\xc3\xa9 = 1\n", "a = 1 \xd1\x96\n", "[\xc3\xa9]\n",
                          "a = [1,\xc3\xa9]\n", "a = \"\"\"x\\\n  \xc3\xa9\"\"\"\n"})
    EXPECT_NE(load_error(bad).find("expected ASCII"), std::string::npos) << bad;
  Options o;
  load_toml_string(
      "# caf\xc3\xa9\n\"\xc3\xa9\" = \"\xc3\xa9\"\nb = '''\xc3\xa9'''\nc = \"\"\"x\xc3\xa9\"\"\"\n",
      "u.toml", o);
  EXPECT_EQ(o.get_string("\xc3\xa9", ""), "\xc3\xa9");
  EXPECT_EQ(o.get_string("c", ""), "x\xc3\xa9");
  EXPECT_EQ(o.get_string("b", ""), "\xc3\xa9");
  // Valid headers, and errors toml++ reports itself, are left to toml++.
  EXPECT_EQ(load_error("[ a . \"b\" ]\nc = 1\n['q']\nd = 2\n"), "");
  EXPECT_NE(load_error("[]\n").find("deep.toml:1:"), std::string::npos);
  EXPECT_EQ(load_error("[]\n").find("expected a key"), std::string::npos);
}

TEST(ConfigLimits, DepthAtTheLimitLoads) {
  // kMaxTomlDepth parts: accepted and flattened; one more: refused.
  const std::string ok = repeat("k.", kMaxTomlDepth - 1) + "k = 7\n";
  Options o;
  load_toml_string(ok, "ok.toml", o);
  EXPECT_EQ(o.get_int(repeat("k.", kMaxTomlDepth - 1) + "k", 0), 7);
  EXPECT_NE(load_error("k." + ok).find("nested " + std::to_string(kMaxTomlDepth + 1) + " deep"),
            std::string::npos);
}

TEST(ConfigLimits, OversizedFileIsRefused) {
  test::ScopedTempDir dir("config-big");
  {
    std::ofstream f(dir.file("big.toml"));
    f << "# " << std::string(kMaxTomlBytes, 'x') << "\nlr = 0.1\n";
  }
  Options o;
  try {
    load_toml_options(dir.file("big.toml"), o);
    FAIL() << "a config over the limit loaded";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("big.toml") + ": config file exceeds the limit"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(dir.file("small.toml")) << "# fine\nlr = 0.1\n";
  load_toml_options(dir.file("small.toml"), o);
  EXPECT_EQ(o.get_string("lr", ""), "0.1");
}

TEST(ConfigLimits, DataBoundOptionsAreDocumentedWithTheLibraryDefaults) {
  EXPECT_EQ(option_default("data.max_image_pixels"), std::to_string(kDefaultMaxImagePixels));
  EXPECT_EQ(kDefaultMaxImagePixels, 8192 * 8192);
  EXPECT_EQ(option_default("data.num_classes"), "0");
}

}  // namespace
}  // namespace dplab
