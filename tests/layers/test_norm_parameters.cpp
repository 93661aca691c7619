#include <gtest/gtest.h>

#include "dplab/core/param_arena.h"
#include "dplab/layers/batchnorm2d.h"
#include "dplab/layers/conv2d.h"
#include "dplab/layers/sequential.h"

namespace dplab {
namespace {

TEST(NormParameters, FoundByModuleTypeAndMarkedInTheArena) {
  auto net = std::make_shared<Sequential>(std::initializer_list<std::shared_ptr<Module>>{
      std::make_shared<Conv2d>(3, 4, 3), std::make_shared<BatchNorm2d>(4),
      std::make_shared<Conv2d>(4, 2, 1)});
  auto names = norm_parameter_names(*net);
  ASSERT_EQ(names, (std::vector<std::string>{"1.weight", "1.bias"}));
  ParamArena arena(net->named_parameters());
  arena.mark_norm_parameters(names);
  for (const auto& s : arena.segments()) EXPECT_EQ(s.is_norm, s.name.rfind("1.", 0) == 0) << s.name;
  EXPECT_THROW(arena.mark_norm_parameters({"nope.weight"}), Error);
}

}  // namespace
}  // namespace dplab
