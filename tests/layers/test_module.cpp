// Module base: PyTorch names and state_dict order, strict loading errors, train/eval, init
// stream order. The toy modules here use only `add`, so they test the base class alone.
#include <gtest/gtest.h>

#include "common/harness.h"
#include "dplab/layers/module.h"

namespace dplab {
namespace {

// A leaf with a parameter pair and a buffer; forward adds the weight.
class Toy : public Module {
 public:
  explicit Toy(int64_t n) {
    weight_ = register_parameter("weight", Tensor::zeros({n}));
    bias_ = register_parameter("bias", Tensor::zeros({n}));
    register_buffer("running", Tensor::ones({n}));
  }
  Tensor forward(const Tensor& x) override { return add(x, weight_); }
  std::string type_name() const override { return "Toy"; }
  std::string extra_repr() const override { return std::to_string(weight_.numel()); }
  void reset_parameters(PhiloxStream& rng) override {
    auto w = weight_.data<float>();
    for (int64_t i = 0; i < weight_.numel(); ++i) w[i] = rng.uniform();
    bias_.fill_(0.0);
  }
  Tensor weight_, bias_;
};

// Has its own parameter and children, like torchvision's ResNet (conv1.weight, bn1..., layer1.0).
class Tree : public Module {
 public:
  Tree() {
    scale_ = register_parameter("scale", Tensor::ones({3}));
    a_ = register_module("a", std::make_shared<Toy>(3));
    auto inner = std::make_shared<Tree2>();
    register_module("inner", inner);
    b_ = register_module("b", std::make_shared<Toy>(3));
  }
  struct Tree2 : public Module {
    Tree2() {
      register_module("0", std::make_shared<Toy>(3));
      register_buffer("count", Tensor::zeros({}, DType::i64));
    }
    Tensor forward(const Tensor& x) override { return named_children()[0].second->forward(x); }
    std::string type_name() const override { return "Tree2"; }
  };
  Tensor forward(const Tensor& x) override { return (*b_)((*a_)(add(x, scale_))); }
  std::string type_name() const override { return "Tree"; }
  Tensor scale_;
  std::shared_ptr<Toy> a_, b_;
};

std::vector<std::string> names(const std::vector<NamedTensor>& v) {
  std::vector<std::string> r;
  for (auto& nt : v) r.push_back(nt.name);
  return r;
}

TEST(Module, NamesAndStateDictOrderFollowPyTorch) {
  Tree t;
  EXPECT_EQ(names(t.named_parameters()),
            (std::vector<std::string>{"scale", "a.weight", "a.bias", "inner.0.weight",
                                      "inner.0.bias", "b.weight", "b.bias"}));
  EXPECT_EQ(names(t.named_buffers()),
            (std::vector<std::string>{"a.running", "inner.count", "inner.0.running", "b.running"}));
  EXPECT_EQ(names(t.state_dict()),
            (std::vector<std::string>{"scale", "a.weight", "a.bias", "a.running", "inner.count",
                                      "inner.0.weight", "inner.0.bias", "inner.0.running",
                                      "b.weight", "b.bias", "b.running"}));
  EXPECT_EQ(t.num_parameters(), 3 * 7);
  for (auto& p : t.parameters()) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
    EXPECT_EQ(p.dtype(), DType::f32);
  }
  for (auto& b : t.named_buffers()) EXPECT_FALSE(b.tensor.requires_grad()) << b.name;
  // The handles layers keep are the registered tensors themselves.
  EXPECT_TRUE(t.named_parameters()[1].tensor.is_same(t.a_->weight_));
}

TEST(Module, DescribePrintsTheTree) {
  Tree t;
  EXPECT_EQ(t.describe(),
            "Tree(\n  (a): Toy(3)\n  (inner): Tree2(\n    (0): Toy(3)\n  )\n  (b): Toy(3)\n)");
}

TEST(Module, RegistrationRejectsDuplicatesAndDottedNames) {
  struct Bad : Module {
    explicit Bad(int mode) {
      register_parameter("w", Tensor::zeros({1}));
      if (mode == 0) register_parameter("w", Tensor::zeros({1}));
      if (mode == 1) register_buffer("w", Tensor::zeros({1}));
      if (mode == 2) register_parameter("a.b", Tensor::zeros({1}));
    }
    Tensor forward(const Tensor& x) override { return x; }
    std::string type_name() const override { return "Bad"; }
  };
  for (int mode : {0, 1, 2}) EXPECT_THROW(Bad{mode}, Error) << mode;
  EXPECT_NO_THROW(Bad{3});
}

TEST(Module, TrainEvalIsRecursive) {
  Tree t;
  EXPECT_TRUE(t.is_training());
  t.eval();
  EXPECT_FALSE(t.is_training());
  EXPECT_FALSE(t.a_->is_training());
  EXPECT_FALSE(t.named_children()[1].second->named_children()[0].second->is_training());
  t.train();
  EXPECT_TRUE(t.b_->is_training());
}

TEST(Module, LoadStateDictCopiesValues) {
  Tree src, dst;
  initialize(src, 5);
  src.named_buffers()[1].tensor.fill_(7);  // inner.count (i64)
  dst.load_state_dict(src.state_dict());
  auto s = src.state_dict(), d = dst.state_dict();
  for (size_t i = 0; i < s.size(); ++i) {
    EXPECT_EQ(s[i].tensor.to_vector(), d[i].tensor.to_vector()) << s[i].name;
    EXPECT_FALSE(s[i].tensor.is_same(d[i].tensor));
  }
  EXPECT_EQ(dst.named_buffers()[1].tensor.to_vector_i64(), std::vector<int64_t>{7});
}

std::string load_error(Module& m, const std::vector<NamedTensor>& st, bool strict = true) {
  try {
    m.load_state_dict(st, strict);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Module, LoadStateDictStrictErrorsListTheKeys) {
  Tree src, dst;
  auto st = src.state_dict();
  // Missing: drop a.bias and b.running; unexpected: add two unknown keys.
  std::vector<NamedTensor> bad;
  for (auto& nt : st)
    if (nt.name != "a.bias" && nt.name != "b.running") bad.push_back(nt);
  bad.push_back({"fc.weight", Tensor::zeros({2})});
  bad.push_back({"a.extra", Tensor::zeros({2})});
  const std::string e = load_error(dst, bad);
  EXPECT_NE(e.find("missing keys: a.bias, b.running"), std::string::npos) << e;
  EXPECT_NE(e.find("unexpected keys: fc.weight, a.extra"), std::string::npos) << e;
  // Not strict: the same state loads what matches.
  EXPECT_EQ(load_error(dst, bad, false), "");

  // Shape mismatch is an error even when not strict, naming both shapes.
  std::vector<NamedTensor> wrong = src.state_dict();
  wrong[1].tensor = Tensor::zeros({4});  // a.weight
  for (bool strict : {true, false}) {
    const std::string m = load_error(dst, wrong, strict);
    EXPECT_NE(m.find("a.weight (checkpoint [4], model [3])"), std::string::npos) << m;
  }
  // A failed load changes nothing.
  Tree fresh;
  initialize(dst, 1);
  auto before = dst.a_->weight_.to_vector();
  wrong[0].tensor = Tensor::full({3}, 9.0);
  load_error(dst, wrong);
  EXPECT_EQ(dst.a_->weight_.to_vector(), before);
  EXPECT_EQ(dst.scale_.to_vector(), std::vector<float>(3, 1.f));
}

TEST(Module, InitializeIsPreOrderFromOneStream) {
  Tree t1, t2, t3;
  initialize(t1, 42);
  initialize(t2, 42);
  initialize(t3, 43);
  auto p1 = t1.state_dict(), p2 = t2.state_dict(), p3 = t3.state_dict();
  for (size_t i = 0; i < p1.size(); ++i)
    EXPECT_EQ(p1[i].tensor.to_vector(), p2[i].tensor.to_vector()) << p1[i].name;
  EXPECT_NE(t1.a_->weight_.to_vector(), t3.a_->weight_.to_vector());
  // Registration order a, inner.0, b consumes the stream: 3 draws each.
  PhiloxStream rng(42, 0);
  std::vector<float> expect(9);
  for (auto& v : expect) v = rng.uniform();
  EXPECT_EQ(t1.a_->weight_.to_vector(), std::vector<float>(expect.begin(), expect.begin() + 3));
  EXPECT_EQ(t1.b_->weight_.to_vector(), std::vector<float>(expect.begin() + 6, expect.end()));
}

TEST(Module, ForwardRunsThroughTheTreeAndGradientsReachParameters) {
  Tree t;
  initialize(t, 3);
  Tensor x = test::random_tensor({3}, 9);
  Tensor y = t(x);
  auto xv = x.to_vector(), a = t.a_->weight_.to_vector(), b = t.b_->weight_.to_vector();
  auto yv = y.to_vector();
  for (int i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(yv[i], xv[i] + 1.f + a[i] + b[i]);
  backward(y, Tensor::ones({3}));
  EXPECT_EQ(t.scale_.grad().to_vector(), std::vector<float>(3, 1.f));
  EXPECT_EQ(t.a_->weight_.grad().to_vector(), std::vector<float>(3, 1.f));
}

TEST(Module, ParamArenaKeepsModuleHandlesInSync) {
  Tree t;
  initialize(t, 4);
  auto before = t.a_->weight_.to_vector();
  ParamArena arena(t.named_parameters());
  EXPECT_EQ(t.a_->weight_.to_vector(), before);
  // Writing through the arena is visible through the module's handle.
  Tensor flat = arena.params();
  flat.fill_(2.0);
  EXPECT_EQ(t.a_->weight_.to_vector(), std::vector<float>(3, 2.f));
  EXPECT_EQ(arena.segment("inner.0.weight").shape, (Shape{3}));
}

}  // namespace
}  // namespace dplab
