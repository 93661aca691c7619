// core/option_decl.h: a key's declaration is where its default, range and help live. Reads
// through a table return the declared default when unset, check a set value against the rule
// (a UsageError in the one message form), and struct initialisers take defaults from it.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "dplab/core/option_decl.h"
#include "dplab/core/usage_error.h"

namespace dplab {
namespace {

using test::error_of;
using test::usage_error_of;

enum class Color { red, green, blue };  // the choices' order below

const OptionTable& table() {
  static const OptionTable t({
      {"x.n", "4", "a count", integer(1)},
      {"x.rate", "0.5", "a fraction", number(0, 1, true)},
      {"x.on", "true", "a switch", boolean()},
      {"x.color", "green", "a colour", choice({"red", "green", "blue"})},
      {"x.name", "", "free text", text()},
      {"x.seed", "(seed)", "computed by the reader", integer(0)},
  });
  return t;
}

TEST(OptionDecl, UnsetKeysReadTheDeclaredDefault) {
  const Options none;
  EXPECT_EQ(table().get_int(none, "x.n"), 4);
  EXPECT_EQ(table().get_double(none, "x.rate"), 0.5);
  EXPECT_TRUE(table().get_bool(none, "x.on"));
  EXPECT_EQ(table().get_string(none, "x.color"), "green");
  EXPECT_EQ(table().get_int(none, "x.seed", 7), 7);  // the reader's computed default
  // The read is recorded with the declared default (run.json, checkpoints' trajectory).
  EXPECT_EQ(none.default_read("x.n"), "4");
  EXPECT_EQ(none.default_read("x.rate"), "0.5");
}

TEST(OptionDecl, SetValuesAreCheckedAgainstTheRule) {
  Options o;
  o.set("x.n", "0");
  EXPECT_EQ(usage_error_of([&] { table().get_int(o, "x.n"); }),
            "option x.n: expected an integer >= 1, got '0'");
  o.set("x.rate", "1");
  EXPECT_EQ(usage_error_of([&] { table().get_double(o, "x.rate"); }),
            "option x.rate: expected a number in [0, 1), got '1'");
  o.set("x.on", "maybe");
  EXPECT_EQ(usage_error_of([&] { table().get_bool(o, "x.on"); }),
            "option x.on: expected true or false, got 'maybe'");
  o.set("x.color", "gren");
  EXPECT_EQ(usage_error_of([&] { table().get_string(o, "x.color"); }),
            "option x.color: unknown value 'gren' (did you mean 'green'?); expected red, green or "
            "blue");
  o.set("x.seed", "-1");
  EXPECT_EQ(usage_error_of([&] { table().get_int(o, "x.seed", 7); }),
            "option x.seed: expected an integer >= 0, got '-1'");
  o.set("x.n", "12");
  EXPECT_EQ(table().get_int(o, "x.n"), 12);
  o.set("x.name", "anything at all");
  EXPECT_EQ(table().get_string(o, "x.name"), "anything at all");
}

TEST(OptionDecl, StructDefaultsComeFromTheDeclaration) {
  EXPECT_EQ(table().default_int("x.n"), 4);
  EXPECT_EQ(table().default_double("x.rate"), 0.5);
  EXPECT_TRUE(table().default_bool("x.on"));
  EXPECT_EQ(table().default_choice<Color>("x.color"), Color::green);
  Options o;
  o.set("x.color", "blue");
  EXPECT_EQ(table().get_choice<Color>(o, "x.color"), Color::blue);
  EXPECT_EQ(table().prefixed("p.", "what").at("p.x.n").help, "what: a count");
}

TEST(OptionDecl, BadDeclarationsAndUndeclaredReadsAreBugs) {
  EXPECT_NE(error_of([] {
              OptionTable({{"y.n", "0", "bad default", integer(1)}});
            }).find("the default of y.n does not fit its rule"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              table().get_int(Options(), "x.undeclared");
            }).find("x.undeclared is read but not declared"),
            std::string::npos);
}

}  // namespace
}  // namespace dplab
