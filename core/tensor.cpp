#include "dplab/core/tensor.h"

#include <sstream>

#include "dplab/core/autograd.h"
#include "dplab/core/backend.h"

namespace dplab {

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(s.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::nChw16c:
      return "nChw16c";
    case Layout::nhwc:
      return "nhwc";
    case Layout::strided:
      break;
  }
  return "strided";
}

bool blockable(const Shape& shape, DType dtype, Device device) {
  return (dtype == DType::f32 || dtype == DType::bf16) && device.is_cpu() && shape.size() == 4 &&
         shape[1] > 0 && shape[1] % kBlock16c == 0;
}

bool blockable(const Tensor& t) {
  return blockable(t.shape(), t.dtype(), t.device());
}

bool layout_allows(Layout l, const Shape& shape, DType dtype, Device device) {
  switch (l) {
    case Layout::strided:
      return true;
    case Layout::nChw16c:
      return blockable(shape, dtype, device);
    case Layout::nhwc:
      return is_floating(dtype) && shape.size() == 4;
  }
  return false;
}

// What a layout needs, for errors.
static const char* layout_needs(Layout l) {
  return l == Layout::nhwc ? "a float [N, C, H, W] tensor"
                           : "f32 or bf16 [N, C, H, W] on the CPU with C a multiple of 16";
}

static void check_valid_shape(const Shape& shape) {
  for (int64_t d : shape) DPLAB_CHECK(d >= 0, "invalid shape {}: negative size", shape_str(shape));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_valid_shape(shape);
  auto impl = std::make_shared<TensorImpl>();
  impl->storage =
      Storage::allocate(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(impl);
}

Tensor Tensor::empty(const Shape& shape, Layout layout, DType dtype, Device device) {
  DPLAB_CHECK(layout_allows(layout, shape, dtype, device),
              "a tensor in the {} layout must be {}; got {} {} on {}", layout_name(layout),
              layout_needs(layout), dtype_name(dtype), shape_str(shape), device.str());
  Tensor t = empty(shape, dtype, device);
  t.impl().layout = layout;
  return t;
}

Tensor Tensor::empty_like(const Tensor& t) {
  const DType d = is_floating(t.dtype()) ? t.dtype() : DType::f32;
  return t.is_blocked() ? empty(t.shape(), t.layout(), d, t.device())
                        : empty(t.shape(), d, t.device());
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.fill_(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  DPLAB_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
              "from_vector: {} values for shape {}", values.size(), shape_str(shape));
  Tensor t = empty(shape, dtype);
  void* p = t.raw_data();
  for (size_t i = 0; i < values.size(); ++i) store_from_f32(p, dtype, i, values[i]);
  return t;
}

Tensor Tensor::from_vector_i64(const std::vector<int64_t>& values, const Shape& shape) {
  DPLAB_CHECK(static_cast<int64_t>(values.size()) == shape_numel(shape),
              "from_vector_i64: {} values for shape {}", values.size(), shape_str(shape));
  Tensor t = empty(shape, DType::i64);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

Tensor Tensor::view_of(std::shared_ptr<Storage> storage, int64_t offset, const Shape& shape,
                       DType dtype, Shape strides) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::move(storage);
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides.empty() ? contiguous_strides(shape) : std::move(strides);
  impl->dtype = dtype;
  return Tensor(impl);
}

// Views re-interpret strides, which a blocked layout does not have.
static void check_strided(const Tensor& t, const char* what) {
  DPLAB_CHECK(!t.is_blocked(),
              "{} of {}: views need a strided tensor; convert the {} layout first "
              "(.contiguous())",
              what, t.str(), layout_name(t.layout()));
}

static int wrap_dim(int d, int n, const char* what) {
  int w = d < 0 ? d + n : d;
  DPLAB_CHECK(w >= 0 && w < n, "{}: dimension {} out of range for a {}-d tensor", what, d, n);
  return w;
}

int64_t Tensor::size(int d) const {
  return shape()[wrap_dim(d, dim(), "size")];
}
int64_t Tensor::stride(int d) const {
  return strides()[wrap_dim(d, dim(), "stride")];
}

bool Tensor::is_contiguous() const {
  if (is_blocked()) return false;
  int64_t expect = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape()[i] != 1 && strides()[i] != expect) return false;
    expect *= shape()[i];
  }
  return true;
}

std::string Tensor::str() const {
  if (!defined()) return "undefined";
  return fmt::format("{}{} {}{}", dtype_name(dtype()), shape_str(shape()), device().str(),
                     is_blocked() ? std::string(" ") + layout_name(layout()) : "");
}

void* Tensor::raw_data() const {
  DPLAB_CHECK(!is_blocked(),
              "{} is in the blocked {} layout, which this code does not read (it reads strided "
              "tensors): convert it with .contiguous() first",
              str(), layout_name(layout()));
  return raw_data_any_layout();
}

void* Tensor::raw_data_any_layout() const {
  return static_cast<char*>(impl().storage->data()) + impl().offset * dtype_size(dtype());
}

std::vector<float> Tensor::to_vector() const {
  Tensor h = to(Device::cpu()).contiguous();
  std::vector<float> v(h.numel());
  const void* p = h.raw_data();
  for (int64_t i = 0; i < h.numel(); ++i) v[i] = load_as_f32(p, h.dtype(), i);
  return v;
}

std::vector<int64_t> Tensor::to_vector_i64() const {
  Tensor h = to(Device::cpu()).to(DType::i64).contiguous();
  const int64_t* p = h.data<int64_t>();
  return std::vector<int64_t>(p, p + h.numel());
}

float Tensor::item() const {
  DPLAB_CHECK(numel() == 1, "item() on {}: needs exactly one element", str());
  return to_vector()[0];
}

Tensor Tensor::view(const Shape& new_shape) const {
  check_strided(*this, "view");
  DPLAB_CHECK(is_contiguous(), "view {} -> {}: tensor is not contiguous", str(),
              shape_str(new_shape));
  Shape s = new_shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      DPLAB_CHECK(infer < 0, "view: more than one -1 in {}", shape_str(new_shape));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    DPLAB_CHECK(known > 0 && numel() % known == 0, "view {} -> {}: sizes do not divide", str(),
                shape_str(new_shape));
    s[infer] = numel() / known;
  }
  DPLAB_CHECK(shape_numel(s) == numel(), "view {} -> {}: element counts differ", str(),
              shape_str(new_shape));
  return view_of(storage(), offset(), s, dtype());
}

Tensor Tensor::slice(int d, int64_t start, int64_t end) const {
  check_strided(*this, "slice");
  d = wrap_dim(d, dim(), "slice");
  DPLAB_CHECK(0 <= start && start <= end && end <= shape()[d], "slice [{}, {}) of dim {} of {}",
              start, end, d, str());
  Shape s = shape();
  s[d] = end - start;
  return view_of(storage(), offset() + start * strides()[d], s, dtype(), strides());
}

Tensor Tensor::select(int d, int64_t index) const {
  check_strided(*this, "select");
  d = wrap_dim(d, dim(), "select");
  DPLAB_CHECK(0 <= index && index < shape()[d], "select index {} of dim {} of {}", index, d, str());
  Shape s = shape(), st = strides();
  int64_t off = offset() + index * st[d];
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return view_of(storage(), off, s, dtype(), st);
}

Tensor Tensor::flat_range(int64_t start, int64_t end) const {
  DPLAB_CHECK(is_contiguous(), "flat_range of non-contiguous {}", str());
  DPLAB_CHECK(0 <= start && start <= end && end <= numel(), "flat_range [{}, {}) of {}", start, end,
              str());
  return view_of(storage(), offset() + start, {end - start}, dtype());
}

Tensor Tensor::transpose(int d0, int d1) const {
  check_strided(*this, "transpose");
  d0 = wrap_dim(d0, dim(), "transpose");
  d1 = wrap_dim(d1, dim(), "transpose");
  Shape s = shape(), st = strides();
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  return view_of(storage(), offset(), s, dtype(), st);
}

Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape(), dtype(), device());
  t.copy_(*this);
  return t;
}

Tensor Tensor::to(Layout l) const {
  if (l == layout()) return *this;
  if (l == Layout::strided) return clone();
  DPLAB_CHECK(layout_allows(l, shape(), dtype(), device()),
              "{} cannot take the {} layout (needs {})", str(), layout_name(l), layout_needs(l));
  Tensor t = empty(shape(), l, dtype(), device());
  t.copy_(*this);
  return t;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype()) return *this;
  // A non-strided layout keeps itself where it can hold t (one cast in the same element order);
  // otherwise the NCHW form is converted.
  if (is_blocked() && !layout_allows(layout(), shape(), t, device())) return contiguous().to(t);
  Tensor r = empty(shape(), layout(), t, device());
  r.copy_(*this);
  return r;
}

#ifdef DPLAB_WITH_CUDA
void cuda_copy_between_devices(const Tensor& src, Tensor& dst);  // core/cuda
#endif

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  if (is_blocked()) return contiguous().to(d);  // a layout moves as its NCHW form
  Tensor r = empty(shape(), dtype(), d);
  r.copy_(*this);
  return r;
}

void Tensor::copy_(const Tensor& src) {
  DPLAB_CHECK(src.shape() == shape(), "copy_: source {} into {}", src.str(), str());
  if (src.device() == device()) {
    backend_for(device()).ew.copy(src, *this);
    return;
  }
#ifdef DPLAB_WITH_CUDA
  cuda_copy_between_devices(src, *this);
#else
  DPLAB_FAIL("copy_ from {} to {}: dplab was built without DPLAB_CUDA", src.str(), str());
#endif
}

void Tensor::fill_(double value) {
  backend_for(device()).ew.fill(*this, value);
}

Tensor& Tensor::set_requires_grad(bool r) {
  DPLAB_CHECK(!r || is_floating(dtype()), "requires_grad on non-float tensor {}", str());
  DPLAB_CHECK(is_leaf(), "set_requires_grad on a non-leaf tensor {}", str());
  impl().requires_grad = r;
  return *this;
}

void Tensor::set_grad(const Tensor& g) {
  if (!g.defined()) {
    impl().grad.reset();
    return;
  }
  DPLAB_CHECK(g.shape() == shape(), "set_grad: gradient {} for tensor {}", g.str(), str());
  impl().grad = g.impl_ptr();
}

void Tensor::register_grad_ready_hook(GradReadyHook hook) {
  DPLAB_CHECK(is_leaf() && requires_grad(), "grad-ready hooks are for leaves that require grad");
  impl().grad_ready_hooks.push_back(std::move(hook));
}

void Tensor::clear_grad_ready_hooks() {
  impl().grad_ready_hooks.clear();
}

Tensor Tensor::detach() const {
  Tensor t = view_of(storage(), offset(), shape(), dtype(), strides());
  t.impl().layout = layout();
  return t;
}

void Tensor::rebind_storage(std::shared_ptr<Storage> s, int64_t off) {
  DPLAB_CHECK(is_contiguous(), "rebind_storage of non-contiguous {}", str());
  DPLAB_CHECK((off + numel()) * static_cast<int64_t>(dtype_size(dtype())) <=
                  static_cast<int64_t>(s->nbytes()),
              "rebind_storage: {} at offset {} exceeds storage of {} bytes", str(), off,
              s->nbytes());
  impl().storage = std::move(s);
  impl().offset = off;
  impl().strides = contiguous_strides(shape());
}

void check_shape(const Tensor& t, const Shape& expected, const char* what) {
  DPLAB_CHECK(t.shape() == expected, "{}: expected shape {}, got {}", what, shape_str(expected),
              shape_str(t.shape()));
}

void check_dtype(const Tensor& t, DType expected, const char* what) {
  DPLAB_CHECK(t.dtype() == expected, "{}: expected dtype {}, got {}", what, dtype_name(expected),
              dtype_name(t.dtype()));
}

void check_same_device(const Tensor& a, const Tensor& b, const char* what) {
  DPLAB_CHECK(a.device() == b.device(), "{}: tensors on {} and {}", what, a.device().str(),
              b.device().str());
}

}  // namespace dplab
