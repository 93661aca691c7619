// Tensor: shape, strides, dtype, device and a reference-counted Storage with an offset.
// Copying a Tensor copies a handle (like torch.Tensor); clone() copies data.
// Autograd state (requires_grad, grad, grad_fn, grad-ready hooks) lives in the TensorImpl.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "dplab/core/device.h"
#include "dplab/core/dtype.h"
#include "dplab/core/error.h"
#include "dplab/core/storage.h"

namespace dplab {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);

class Node;
class Tensor;
using GradReadyHook = std::function<void(const Tensor&)>;

// How a tensor's elements are laid out in its storage.
// - strided: element (i0, i1, ...) lives at offset + Σ i_k·stride_k (every view, NCHW by default).
// - nChw16c: oneDNN's blocked activation layout on AVX-512 CPUs, for 4-D f32 or bf16 CPU tensors
//   [N, C, H, W] with C % 16 == 0: memory order [N][C/16][H][W][16], no offset. Its convolutions
//   read and write it natively, so the fast CPU kernels keep a network's activations in it from
//   one layer to the next (conv -> batch norm -> ReLU -> add -> conv) instead of reordering to
//   NCHW and back around every convolution. Strides mean nothing for such a tensor: raw_data()
//   and data<T>() refuse it, naming the layout, so code that reads strided tensors can never
//   misread one; kernels that understand it use data_any_layout<T>(). contiguous() (and
//   clone(), to_vector()) return the NCHW tensor.
// - nhwc: channels-last, for 4-D tensors [N, C, H, W] of a float dtype on any device: memory
//   order [N][H][W][C], no offset. cuDNN's tensor-core convolutions read and write it natively,
//   so the CUDA kernels keep a network's 16-bit activations in it from layer to layer (the role
//   nChw16c plays on the CPU). It is a non-strided layout like nChw16c (is_blocked() is true):
//   the same refusals and conversions apply. Its elements sit where a strided tensor with
//   strides [H·W·C, 1, W·C, C] would put them (nhwc_strides, core/layout.h), which is how
//   stride-driven kernels read it.
enum class Layout : uint8_t { strided, nChw16c, nhwc };
constexpr int64_t kBlock16c = 16;
const char* layout_name(Layout l);

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  Shape strides;  // in elements
  DType dtype = DType::f32;
  Layout layout = Layout::strided;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;        // leaf gradient (may be a view into a grad arena)
  std::shared_ptr<Node> grad_fn;           // non-leaf: the node that produced it
  int output_nr = 0;                       // which output of grad_fn
  std::shared_ptr<Node> grad_accumulator;  // leaf: created on first use
  std::vector<GradReadyHook> grad_ready_hooks;
  std::string name;  // optional, for error messages (parameter name)
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories ---------------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  // An uninitialised tensor [N, C, H, W] of `dtype` in `layout` on `device` (strided:
  // NCHW-contiguous; nChw16c: f32 or bf16 on the CPU with C % 16 == 0; nhwc: any float dtype).
  static Tensor empty(const Shape& shape, Layout layout, DType dtype = DType::f32,
                      Device device = Device::cpu());
  // An uninitialised tensor shaped, typed and laid out like `t` (same device); `t`'s dtype
  // unless it is not a float dtype (then f32).
  static Tensor empty_like(const Tensor& t);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu());
  static Tensor full(const Shape& shape, double value, DType dtype = DType::f32,
                     Device device = Device::cpu());
  static Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu()) {
    return full(shape, 1.0, dtype, device);
  }
  // Copies host values (converted to `dtype`) into a new CPU tensor.
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            DType dtype = DType::f32);
  static Tensor from_vector_i64(const std::vector<int64_t>& values, const Shape& shape);
  static Tensor scalar(float v) { return from_vector({v}, {}); }
  // A view of existing storage.
  static Tensor view_of(std::shared_ptr<Storage> storage, int64_t offset, const Shape& shape,
                        DType dtype, Shape strides = {});

  // ---- metadata ------------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t size(int d) const;  // negative d counts from the end
  int64_t stride(int d) const;
  int dim() const { return static_cast<int>(impl().shape.size()); }
  int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().storage->device(); }
  int64_t offset() const { return impl().offset; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }
  bool is_contiguous() const;  // false for a blocked layout
  Layout layout() const { return impl().layout; }
  bool is_blocked() const { return impl().layout != Layout::strided; }
  const std::shared_ptr<Storage>& storage() const { return impl().storage; }
  std::string str() const;  // "f32[2, 3] cpu"
  const std::string& name() const { return impl().name; }
  void set_name(std::string n) { impl().name = std::move(n); }

  // ---- data access (CPU or device pointer; checks dtype; strided layout only) ----------------
  void* raw_data() const;
  template <typename T>
  T* data() const {
    DPLAB_CHECK(dtype_of<T>::value == dtype(), "tensor {} accessed as {}", str(),
                dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw_data());
  }
  // The first element of the storage block whatever the layout: for kernels that check
  // layout() themselves.
  void* raw_data_any_layout() const;
  template <typename T>
  T* data_any_layout() const {
    DPLAB_CHECK(dtype_of<T>::value == dtype(), "tensor {} accessed as {}", str(),
                dtype_name(dtype_of<T>::value));
    return static_cast<T*>(raw_data_any_layout());
  }
  // Host copy of all elements as float (any dtype, any device, any strides). For tests and I/O.
  std::vector<float> to_vector() const;
  std::vector<int64_t> to_vector_i64() const;
  float item() const;

  // ---- views and copies (no autograd; see core/ops.h for differentiable versions) ----------
  Tensor view(const Shape& shape) const;  // contiguous only; one dim may be -1
  Tensor slice(int dim, int64_t start, int64_t end) const;
  Tensor select(int dim, int64_t index) const;  // removes dim
  Tensor flat_range(int64_t start,
                    int64_t end) const;  // elements [start,end) of a contiguous 1-D view
  Tensor transpose(int d0, int d1) const;
  Tensor contiguous() const;       // self if already contiguous; a blocked tensor's NCHW copy
  Tensor clone() const;            // new contiguous (strided) storage, same dtype and device
  Tensor to(Layout layout) const;  // self if already in `layout`
  // Self if strided (any strides), else the NCHW copy: for code that reads strided tensors.
  Tensor contiguous_if_blocked() const { return is_blocked() ? contiguous() : *this; }
  // Self if already of `dtype`; else a new tensor: contiguous when strided, in the same
  // non-strided layout when that layout can hold `dtype` (else NCHW).
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  void copy_(const Tensor& src);  // shapes must match; converts dtype; any device pair
  void fill_(double value);
  void zero_() { fill_(0.0); }

  // ---- autograd ------------------------------------------------------------------------------
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& set_requires_grad(bool r);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  Tensor grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }
  void set_grad(const Tensor& g);  // g may be a view into a gradient arena
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  int output_nr() const { return impl().output_nr; }
  // Called once per backward pass, after the last accumulation into this leaf's grad.
  void register_grad_ready_hook(GradReadyHook hook);
  void clear_grad_ready_hooks();
  Tensor detach() const;  // same data, no history

  // Re-points this tensor (and every handle sharing its impl) at other storage, keeping shape,
  // dtype and contiguity: how a ParamArena turns parameters into views.
  void rebind_storage(std::shared_ptr<Storage> storage, int64_t offset);

  TensorImpl& impl() const {
    DPLAB_CHECK(impl_ != nullptr, "use of an undefined tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool is_same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// Throws "<what>: expected <expected>, got <shape>" style errors.
void check_shape(const Tensor& t, const Shape& expected, const char* what);
void check_dtype(const Tensor& t, DType expected, const char* what);
void check_same_device(const Tensor& a, const Tensor& b, const char* what);
// True when `t` may be given the nChw16c layout: f32, CPU, 4-D, C a multiple of 16.
bool blockable(const Tensor& t);
bool blockable(const Shape& shape, DType dtype, Device device);
// True when a tensor of this shape, dtype and device may be held in layout l (strided: always).
bool layout_allows(Layout l, const Shape& shape, DType dtype, Device device);

}  // namespace dplab
