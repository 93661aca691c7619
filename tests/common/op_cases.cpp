#include "common/op_cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>

#include "common/op_case_inputs.h"

namespace dplab::test {
namespace {

using namespace cases;

std::vector<OpCase> make_cases() {
  std::vector<OpCase> cs;
  add_elementwise(cs);
  add_reductions(cs);
  add_shape_ops(cs);
  add_linear(cs);
  add_conv(cs);
  add_pooling(cs);
  add_batch_norm(cs);
  add_losses(cs);
  add_dropout(cs);
  add_blocked_layout(cs);
  add_nhwc_layout(cs);
  add_bf16_activations(cs);
  return cs;
}

void expect_all_close(const std::vector<Tensor>& got, const std::vector<Tensor>& want, double tol,
                      const std::string& what, bool undefined_allowed) {
  ASSERT_EQ(got.size(), want.size()) << what << ": count";
  for (size_t i = 0; i < got.size(); ++i) {
    const std::string tag = fmt::format("{} {}", what, i);
    ASSERT_EQ(got[i].defined(), want[i].defined()) << tag << ": defined on one side only";
    if (!want[i].defined()) {
      EXPECT_TRUE(undefined_allowed) << tag << " is undefined";
      continue;
    }
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << tag << ": dtype";
    expect_close(got[i], want[i], tol, tag);
  }
}

}  // namespace

void PrintTo(const OpCase& c, std::ostream* os) {
  *os << c.name;
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

std::vector<std::string> declared_ops(const std::string& source_dir) {
  static const char* const headers[] = {"conv", "elementwise", "linear", "loss", "norm",
                                        "pool", "random",      "reduce", "shape"};
  const std::regex decl(R"(^(?:Tensor|void|double)\s+([A-Za-z_][A-Za-z0-9_]*)\()");
  std::set<std::string> names;
  for (const char* h : headers) {
    const std::string path = fmt::format("{}/core/ops/{}.h", source_dir, h);
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    std::string line;
    std::smatch m;
    while (std::getline(in, line))
      if (std::regex_search(line, m, decl)) names.insert(m[1]);
  }
  return {names.begin(), names.end()};
}

OpCaseResult evaluate_op_case(const OpCase& c, Device device) {
  const std::vector<Tensor> host = c.inputs();
  std::vector<Tensor> in;
  for (const Tensor& h : host) in.push_back(leaf_on(h, device));
  const std::vector<Tensor> out = c.fn(in);
  OpCaseResult r;
  if (!out.empty() && out[0].requires_grad()) {
    EXPECT_EQ(out[0].device(), device) << c.name << ": output 0 left the device";
    const Tensor w = random_tensor(out[0].shape(), 991, 0.5f, 1.5f);
    backward(out[0], w.to(out[0].device()));
  }
  for (const Tensor& o : out) r.outputs.push_back(o.defined() ? o.to(Device::cpu()) : o);
  const bool differentiated = !out.empty() && out[0].requires_grad();
  for (size_t k = 0; k < in.size(); ++k) {
    const Tensor& t = in[k];
    const bool wanted = differentiated && t.defined() && t.requires_grad();
    if (wanted && !t.grad().defined())
      ADD_FAILURE() << c.name << ": input " << k << " requires grad but got none on "
                    << device.str();
    r.grads.push_back(wanted && t.grad().defined() ? t.grad().to(Device::cpu()) : Tensor());
  }
  return r;
}

OpCaseResult evaluate_op_case_on_ref(const OpCase& c) {
  BackendOverride ref(ref_backend());
  return evaluate_op_case(c, Device::cpu());
}

std::string op_case_unsupported(const OpCase& c, Device device) {
  const Backend& be = backend_for(device);
  if (c.bf16_activations && !be.bf16_activations)
    return fmt::format(
        "the {} backend keeps no bf16 activations (Backend::bf16_activations): "
        "autocast casts around its convolutions instead",
        be.name);
  if (c.bf16_kernels && !be.bf16_kernels)
    return fmt::format("the {} backend's kernels take f32 activations only (Backend::bf16_kernels)",
                       be.name);
  return "";
}

void expect_op_case_matches_ref(const OpCase& c, Device device) {
  const OpCaseResult want = evaluate_op_case_on_ref(c);
  const OpCaseResult got = evaluate_op_case(c, device);
  ASSERT_FALSE(want.outputs.empty()) << c.name << " has no outputs";
  expect_all_close(got.outputs, want.outputs, c.tol, c.name + " output", false);
  expect_all_close(got.grads, want.grads, c.tol, c.name + " gradient of input", true);
}

void expect_op_case_gradients(const OpCase& c, Device device) {
  if (!c.finite_differences) return;
  const std::vector<Tensor> host = c.inputs();
  const bool any = std::any_of(host.begin(), host.end(),
                               [](const Tensor& t) { return t.defined() && t.requires_grad(); });
  if (!any) return;
  expect_gradients_match_on(
      device, [&c](const std::vector<Tensor>& v) { return c.fn(v)[0]; }, host, c.grad);
}

}  // namespace dplab::test
