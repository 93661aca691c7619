// Config and option errors stay fast and short whatever the file holds (issue #38): a long key
// or value is cut and its length named, many unknown keys are the first 10 and a count, and
// "did you mean" computes a bounded number of edit-distance cells (the times measured are in
// the issue; here the bound is asserted). Every bad value in a config file exits 2 in the form
// of a bad --set value, naming the file, the key, what is expected and what was found.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "data/temp_dir.h"
#include "dplab/core/suggest.h"
#include "dplab/train/config/config.h"
#include "dplab/train/config/option_values.h"
#include "run_cli.h"

namespace dplab {
namespace {

using test::run_dplab;
using test::ScopedTempDir;

#define EXPECT_HAS(text, what) EXPECT_NE((text).find(what), std::string::npos) << (text)

std::vector<std::string> table_keys() {
  std::vector<std::string> keys;
  for (const auto& s : train_option_specs()) keys.push_back(s.key);
  return keys;
}

// The message of check_no_unknown_options on `opt`, or "".
std::string unknown_error(const Options& opt) {
  try {
    check_no_unknown_options(opt);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// One suggestion computes at most kMaxSuggestChars x 7 cells per candidate.
size_t cell_bound(size_t words, size_t candidates) {
  return words * candidates * kMaxSuggestChars * 7;
}

TEST(ConfigErrors, LongKeyMessageIsShortAndNamesTheLength) {
  const std::string key(900000, 'a');
  Options o;
  load_toml_string(key + " = 1\nlr = 0.1\n", "long.toml", o);
  o.get_double("lr", 0.01);
  const size_t cells = edit_distance_cells();
  const std::string m = unknown_error(o);
  EXPECT_EQ(edit_distance_cells(), cells);  // a word that long is never compared
  EXPECT_HAS(m, "unknown option " + std::string(kExcerptChars, 'a') + "… (900000 characters) (");
  EXPECT_LT(m.size(), 400u) << m.size();
  // A long value of a checked key: cut the same way, quoted.
  const std::string why = check_option_value("lr", std::string(1000000, '7') + "x");
  EXPECT_HAS(why, "option lr: expected a number >= 0, got '" + std::string(kExcerptChars, '7') +
                      "…' (1000001 characters)");
  EXPECT_LT(why.size(), 200u);
  const std::string algo = check_option_value("amp", std::string(1000000, 'f'));
  EXPECT_HAS(algo, "(1000000 characters); expected off, bf16 or f16");
  EXPECT_LT(algo.size(), 200u);
  // Cut between characters, not inside one; short texts stay whole.
  std::string e;
  for (int i = 0; i < 100; ++i) e += "\xc3\xa9";
  EXPECT_EQ(excerpt(e), e.substr(0, 2 * kExcerptChars) + "… (100 characters)");
  EXPECT_EQ(quoted_excerpt("lr"), "'lr'");
  EXPECT_EQ(count_text(59990), "59,990");
  EXPECT_EQ(count_text(1234567), "1,234,567");
}

// The typed reads (core/options.h) cut the key and the value too: a 4245-character key holding
// "2", read as a boolean, was a 4285-byte message (found by fuzz_options).
TEST(ConfigErrors, TypedReadsCutLongKeysAndValues) {
  const std::string key = "data.w" + std::string(4240, 'a');
  Options o;
  o.set(key, "2");
  o.set("n", std::string(5000, 'x'));
  auto message = [](auto&& read) {
    try {
      read();
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string b = message([&] { o.get_bool(key, false); });
  EXPECT_HAS(b, "(4246 characters): expected true or false, got '2'");
  EXPECT_LT(b.size(), 200u) << b.size();
  const std::string i = message([&] { o.get_int("n", 0); });
  EXPECT_HAS(i, "option n: expected an integer, got '" + std::string(kExcerptChars, 'x') +
                    "…' (5000 characters)");
  EXPECT_LT(i.size(), 200u) << i.size();
  const std::string d = message([&] { o.get_double("n", 0); });
  EXPECT_HAS(d, "option n: expected a number, got '");
  EXPECT_LT(d.size(), 200u) << d.size();
  const std::string r = message([&] { o.require_string(std::string(3000, 'k')); });
  EXPECT_HAS(r, "(3000 characters)");
  EXPECT_LT(r.size(), 200u) << r.size();
}

TEST(ConfigErrors, SixtyThousandUnknownKeysAreTheFirstTenAndACount) {
  std::string text = "lr = 0.1\n";
  for (int i = 0; i < 60000; ++i) text += fmt::format("zz{:05} = {}\n", i, i);
  ASSERT_LE(text.size(), kMaxTomlBytes);
  Options o;
  load_toml_string(text, "many.toml", o);
  o.get_double("lr", 0.01);
  const size_t cells = edit_distance_cells();
  const std::string m = unknown_error(o);
  // Suggestions for the 10 listed keys only, among the table's keys and the one read.
  EXPECT_LE(edit_distance_cells() - cells, cell_bound(10, table_keys().size() + 1));
  EXPECT_HAS(m,
             "unknown options zz00000, zz00001, zz00002, zz00003, zz00004, zz00005, zz00006, "
             "zz00007, zz00008, zz00009 and 59,990 more (not used by");
  EXPECT_EQ(m.find("zz00010"), std::string::npos);
  EXPECT_LT(m.size(), 600u) << m;
  // 60,000 near misses of real keys: still 10 suggestions, each bounded.
  Options near;
  for (int i = 0; i < 60000; ++i) near.set(fmt::format("data.wrokers{}", i), "1");
  const size_t before = edit_distance_cells();
  const std::string n = unknown_error(near);
  EXPECT_LE(edit_distance_cells() - before, cell_bound(10, table_keys().size()));
  EXPECT_HAS(n, "data.wrokers0 (did you mean 'data.workers'?), data.wrokers1 (did you mean");
  EXPECT_HAS(n, "and 59,990 more");
  EXPECT_LT(n.size(), 1000u) << n;
}

TEST(ConfigErrors, BoundedSuggestionFindsNormalTypos) {
  const std::vector<std::string> keys = table_keys();
  const std::vector<std::pair<std::string, std::string>> typos = {
      {"chekpoint.keep", "checkpoint.keep"},
      {"data.wrokers", "data.workers"},
      {"daso.Bmax", "daso.B_max"},
      {"lr.gamm", "lr.gamma"},
      {"momentun", "momentum"},
      {"EPOCHS", "epochs"},
      {"nestrov", "nesterov"},
      {"streaming_diloco.fragment_sync_dealy", "streaming_diloco.fragment_sync_delay"},
      {"crossover.sync.powersgd.min_compresion_rate",
       "crossover.sync.powersgd.min_compression_rate"},
      {"lable_smoothing", "label_smoothing"},
  };
  for (const auto& [typo, key] : typos) {
    const size_t cells = edit_distance_cells();
    EXPECT_EQ(closest_name(typo, keys), key) << typo;
    EXPECT_LE(edit_distance_cells() - cells, cell_bound(1, keys.size())) << typo;
  }
  EXPECT_EQ(closest_name("zz.top", keys), "");
  // Beyond kMaxSuggestChars: no suggestion, and nothing computed, even for an exact match.
  const std::string longest(kMaxSuggestChars + 1, 'k');
  const size_t cells = edit_distance_cells();
  EXPECT_EQ(closest_name(longest, {longest}), "");
  EXPECT_EQ(closest_name(std::string(900000, 'a'), keys), "");
  EXPECT_EQ(edit_distance_cells(), cells);
  // The banded distance agrees with the full one wherever it is within its bound.
  const std::vector<std::string> words = {"",     "a",      "ab",        "ba",        "abc",
                                          "daso", "dasso",  "kitten",    "sitting",   "lr.gamma",
                                          "LR",   "hybird", "allredcue", "allreduce", "xyzzy"};
  for (const auto& a : words)
    for (const auto& b : words)
      for (size_t max = 0; max <= 4; ++max) {
        const size_t full = edit_distance(a, b);
        EXPECT_EQ(edit_distance_within(a, b, max), full <= max ? full : max + 1)
            << a << " " << b << " " << max;
      }
  // A banded call reads at most (2 max + 1) cells per row.
  const size_t before = edit_distance_cells();
  EXPECT_EQ(edit_distance_within(std::string(5000, 'a'), std::string(5000, 'b'), 3), 4u);
  EXPECT_LE(edit_distance_cells() - before, 7u * 4);  // stops after the 4th row
}

TEST(ConfigErrors, EveryBadValueInAConfigFileExits2NamingFileKeyAndTypes) {
  ScopedTempDir dir("config-errors-types");
  struct Case {
    std::string file, text, says;
  };
  const std::vector<Case> cases = {
      {"a.toml", "lr = [[1]]\n",
       "a.toml:1:6: option lr: expected a number >= 0, found an array of arrays"},
      {"b.toml", "[[lr]]\nvalue = 1\n",
       "b.toml:1:1: option lr: expected a number >= 0, found an array of tables"},
      {"c.toml", "lr = [{value = 1}]\n",
       "c.toml:1:6: option lr: expected a number >= 0, found an array of tables"},
      {"d.toml", "lr = 1979-05-27\n",
       "d.toml:1:6: option lr: expected a number >= 0, found a date"},
      {"e.toml", "epochs = 07:32:00\n",
       "e.toml:1:10: option epochs: expected an integer >= 1, found a time"},
      {"f.toml", "nesterov = 1979-05-27T07:32:00Z\n",
       "option nesterov: expected true or false, found a date-time"},
      {"g.toml", "amp = [\"bf16\", 1979-05-27]\n",
       "option amp: expected off, bf16 or f16, found an array holding a date"},
      {"h.toml", "out = 1979-05-27\n",
       "option out: expected a string, number, boolean or an array of them, found a date"},
      // Values of the right TOML type that a key does not take: as a --set value, with the
      // file, line and column of the value.
      {"i.toml", "lr = \"abc\"\n", "i.toml:1:6: option lr: expected a number >= 0, got 'abc'"},
      {"j.toml", "[data]\nworkers = -2\n",
       "j.toml:2:11: option data.workers: expected an integer >= 0, got '-2'"},
      {"k.toml", "batch = 1.5\n", "k.toml:1:9: option batch: expected an integer >= 1, got '1.5'"},
      {"l.toml", "lr = [0.1, 0.2]\n",
       "l.toml:1:6: option lr: expected a number >= 0, got '0.1,0.2'"},
      // A table where a number is expected: its keys are unknown options.
      {"m.toml", "batch = {size = 64}\n", "unknown option batch.size"},
      // A run record's values: the same form.
      {"n.json", R"({"options": {"lr": {"value": {"a": 1}}}})",
       "n.json: option lr: expected a number >= 0, found an object"},
      {"o.json", R"({"options": {"lr.milestones": [[30], [60]]}})",
       "option lr.milestones: expected a string, number, boolean or an array of them, found an "
       "array of arrays"},
      {"p.json", R"({"options": {"batch": "0"}})",
       "p.json: option batch: expected an integer >= 1, got '0'"},
  };
  const std::string small =
      " --threads 1 --max-steps 1 --set data.train_limit=64 --set data.test_limit=10 "
      "--set progress=off";
  for (const Case& c : cases) {
    std::ofstream(dir.file(c.file)) << c.text;
    const auto r = run_dplab("train --config " + dir.file(c.file) + small, dir.path);
    EXPECT_EQ(r.status, 2) << c.text << "\n" << r.err;
    EXPECT_HAS(r.err, c.says) << " for: " << c.text;
    EXPECT_LT(r.err.size(), 800u) << r.err;
  }
  // The same form as --set's; a file's value a flag replaces is not the file's error.
  auto r = run_dplab("train --set lr=abc", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "option lr: expected a number >= 0, got 'abc'");
  r = run_dplab("train --config " + dir.file("i.toml") + " --lr 0.1 --set batch=0", dir.path);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_HAS(r.err, "dplab: error: option batch: expected an integer >= 1, got '0'");
}

}  // namespace
}  // namespace dplab
