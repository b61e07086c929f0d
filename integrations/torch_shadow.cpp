// The shadow of small PyTorch results (integrations/torch_shadow.py has the rules), in the dispatcher.
//
// A boxed fallback on the TESTING_ONLY_GenericMode dispatch key, included in the thread-local key set of the
// thread that enables it, sees every operation that thread calls at its outermost level (aten::linear, not
// the aten::mm inside it). It runs the operation below its own key, then, for small host-backed outputs,
// computes the operation again on CPU tensors over the same bytes, or zero-fills outputs whose values it
// cannot know. The Python TorchDispatchMode this replaces cost 15-20 us of host time per operation on
// this machine, most of which could not be kept off the virtual clock; here the operation's own dispatch is
// all that runs outside the paused section, plus the boxing of its arguments (under a microsecond).
// Built on first use by torch.utils.cpp_extension (integrations/torch_shadow.py); loaded as a plain library
// that registers the fallback and the ops timewarp_shadow::{enable,configure,stats}.
#include <ATen/ATen.h>
#include <ATen/Operators.h>
#include <ATen/core/boxing/impl/boxing.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace {

constexpr auto kKey = c10::DispatchKey::TESTING_ONLY_GenericMode;

struct TwAlloc {  // tw_alloc in shim_c/include/tw/core.h
  size_t base, size;
  int device, kind, backed, vmm;
};

// libtimewarp.so is preloaded with global symbols; looked up once, absent outside `timewarp run`
struct Shim {
  int (*lookup)(const void*, TwAlloc*) = nullptr;
  void (*pause)() = nullptr;
  void (*resume)() = nullptr;
  int (*captures)() = nullptr;
  uint64_t (*writes)() = nullptr;  // optional: without it every zero-fill is carried out
  Shim() {
    lookup = reinterpret_cast<int (*)(const void*, TwAlloc*)>(dlsym(RTLD_DEFAULT, "tw_mem_lookup"));
    pause = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "tw_charge_pause"));
    resume = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "tw_charge_resume"));
    captures = reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "tw_captures_active"));
    writes = reinterpret_cast<uint64_t (*)()>(dlsym(RTLD_DEFAULT, "tw_mem_device_writes"));
  }
  bool ok() const { return lookup && pause && resume && captures; }
};
Shim& shim() {
  static Shim s;
  return s;
}

struct Paused {  // the emulator's bookkeeping is not the program's host time
  Paused() { shim().pause(); }
  ~Paused() { shim().resume(); }
};

struct OpInfo {
  bool skip;     // random numbers, allocation-only and bookkeeping ops, ops without tensor results
  bool view;     // may return a view of an input (aten::view; aten::to, reshape, contiguous only sometimes)
  bool inplace;  // writes an argument (in-place and out= variants)
  bool copy;     // aten::copy_
  bool to_copy;  // aten::_to_copy, aten::to
  bool fresh;    // aten::empty*: a new allocation, whatever the block held before
};

int64_t max_bytes = 1 << 20;
int64_t unknown_bytes = 64 << 10;
int64_t counts[4];  // computed, zero-filled, failed, zero-fills found done already
std::thread::id owner;
std::unordered_set<const void*> unknown;  // storages whose bytes are not what the real run would hold
std::unordered_map<const c10::FunctionSchema*, OpInfo> infos;

const char* kLeave[] = {"aten::_local_scalar_dense", "aten::empty", "aten::empty_strided", "aten::empty_like",
                        "aten::set_", "aten::record_stream", "aten::resize_", "aten::item"};
const char* kRandom[] = {"rand", "normal", "bernoulli", "multinomial", "dropout", "uniform", "exponential",
                         "geometric", "cauchy", "log_normal", "random_", "poisson"};

const OpInfo& info_of(const c10::OperatorHandle& op) {
  const c10::FunctionSchema* s = &op.schema();
  auto it = infos.find(s);
  if (it != infos.end()) return it->second;
  const std::string& name = s->name();
  OpInfo i{false, false, false, name == "aten::copy_",
           name == "aten::_to_copy" || name == "aten::to", name.rfind("aten::empty", 0) == 0};
  bool tensor_result = false;
  for (const auto& r : s->returns()) {
    const c10::AliasInfo* a = r.alias_info();
    if (a && !a->isWrite()) i.view = true;
    if (a && a->isWrite()) i.inplace = true;
    if (r.type()->str().find("Tensor") != std::string::npos) tensor_result = true;
  }
  if (!tensor_result) i.skip = true;
  for (const char* l : kLeave)
    if (name == l) i.skip = true;
  for (const char* w : kRandom)
    if (name.find(w) != std::string::npos) i.skip = true;
  return infos.emplace(s, i).first->second;
}

template <class F>
void each_tensor(const c10::IValue& v, F&& f) {
  if (v.isTensor()) {
    f(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList()) f(t);
  } else if (v.isList()) {
    for (const c10::IValue& x : v.toListRef()) each_tensor(x, f);
  } else if (v.isTuple()) {
    for (const c10::IValue& x : v.toTupleRef().elements()) each_tensor(x, f);
  }
}

bool plain_cuda(const at::Tensor& t) {
  if (!t.defined() || !t.is_cuda() || t.layout() != at::kStrided || !t.has_storage()) return false;
  auto ks = t.key_set();
  return !ks.has(c10::DispatchKey::Python) && !ks.has(c10::DispatchKey::Functionalize) &&
         !ks.has(c10::DispatchKey::Conjugate) && !ks.has(c10::DispatchKey::Negative);
}

const void* storage_ptr(const at::Tensor& t) { return t.storage().data(); }

// t's whole storage is small, host-backed device memory
bool backed(const at::Tensor& t) {
  size_t n = t.storage().nbytes();
  if (n == 0) return true;
  if (n > static_cast<size_t>(max_bytes)) return false;
  TwAlloc a;
  auto p = reinterpret_cast<uintptr_t>(storage_ptr(t));
  return shim().lookup(storage_ptr(t), &a) && a.backed == 1 && p + n <= a.base + a.size;
}

// a CPU tensor over the same bytes as the device tensor t
at::Tensor host_alias(const at::Tensor& t) {
  auto opts = at::TensorOptions().dtype(t.dtype()).device(at::kCPU);
  if (t.storage().nbytes() == 0) return at::empty_strided(t.sizes(), t.strides(), opts);
  return at::from_blob(t.data_ptr(), t.sizes(), t.strides(), opts);
}

c10::IValue to_host(const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    return t.defined() && t.is_cuda() ? c10::IValue(host_alias(t)) : v;
  }
  if (v.isTensorList()) {
    c10::List<at::Tensor> out;
    for (const at::Tensor& t : v.toTensorList()) out.push_back(t.is_cuda() ? host_alias(t) : t);
    return out;
  }
  if (v.isList()) {  // Tensor?[] (index): a generic list of optional tensors
    auto in = v.toList();
    c10::impl::GenericList out(in.elementType());
    for (const c10::IValue& x : in) out.push_back(to_host(x));
    return out;
  }
  if (v.isDevice() && v.toDevice().is_cuda()) return c10::Device(at::kCPU);
  return v;
}

// Device byte ranges this shadow zero-filled that nothing has written since: filling them again changes
// nothing. A transformers forward zero-fills the same activations at every call (a 4-layer Llama prefill
// of 512 tokens, about 60 storages of up to 1 MiB); the fills are paused, but the caches they flushed were
// charged to the program's next operations (about 0.3 ms of a 3.7 ms prefill). Any write the shim carries
// out (a copy, a fill: tw_mem_device_writes counts them) forgets them all; the shadow's own computed results
// forget the ranges they write.
std::map<uintptr_t, size_t> zeroed;
size_t zeroed_longest = 0;
uint64_t zeroed_writes = 0;
constexpr size_t kZeroedMax = 4096;  // bounded whatever the program allocates

bool still_zero(uintptr_t p, size_t n) {
  uint64_t w = shim().writes ? shim().writes() : 0;
  if (!shim().writes || w != zeroed_writes || zeroed.size() >= kZeroedMax) {
    zeroed.clear();
    zeroed_longest = 0;
    zeroed_writes = w;
    return false;
  }
  auto it = zeroed.upper_bound(p);
  if (it == zeroed.begin()) return false;
  --it;  // the last range that starts at or before p
  return it->first + it->second >= p + n;
}

void forget_zero(const at::Tensor& t) {  // t's storage was written
  auto p = reinterpret_cast<uintptr_t>(storage_ptr(t));
  size_t n = t.storage().nbytes();
  auto it = zeroed.lower_bound(p > zeroed_longest ? p - zeroed_longest : 0);
  while (it != zeroed.end() && it->first < p + n) it = it->first + it->second > p ? zeroed.erase(it) : ++it;
}

void zero_fill(const at::Tensor& t) {
  auto p = reinterpret_cast<uintptr_t>(storage_ptr(t));
  size_t n = t.storage().nbytes();
  if (still_zero(p, n)) {
    counts[3]++;
    return;
  }
  {
    Paused paused;  // nested in the shadow's own pause, or alone from unknown_float()
    std::memset(reinterpret_cast<void*>(p), 0, n);
  }
  TwAlloc a;  // managed memory: the host writes it without the shim
  if (!shim().lookup(storage_ptr(t), &a) || a.kind != 0) return;
  size_t& z = zeroed[p];
  z = std::max(z, n);
  zeroed_longest = std::max(zeroed_longest, n);
}

void shadow(const c10::OperatorHandle& op, const OpInfo& info, const std::vector<c10::IValue>& args,
            const std::vector<at::Tensor>& outs) {
  std::vector<at::Tensor> ins;
  for (const auto& a : args) each_tensor(a, [&](const at::Tensor& t) { ins.push_back(t); });
  bool derived = false, all_dev = true;
  for (const auto& t : ins) {
    if (!t.defined()) continue;
    if (!t.is_cuda()) { all_dev = false; continue; }
    if (unknown.count(storage_ptr(t))) derived = true;
  }
  if ((info.copy || info.to_copy) && !all_dev) {  // from the host: the shim moved real bytes
    for (const auto& t : outs)
      if (t.is_cuda() && t.numel() * t.element_size() == t.storage().nbytes()) unknown.erase(storage_ptr(t));
    return;
  }
  bool small = true;
  size_t bytes = 0;
  for (const auto& t : outs) {
    if (!t.is_cuda()) continue;
    if (t.is_floating_point() || t.is_complex()) small = false;
    bytes += t.storage().nbytes();
  }
  small = small && bytes <= static_cast<size_t>(unknown_bytes);
  bool ok = derived && !small;  // the inputs' lookups are skipped when the result is unknown and large anyway
  if (!ok) {
    ok = true;
    for (const auto& t : ins)
      if (t.defined() && t.is_cuda() && !(plain_cuda(t) && backed(t))) ok = false;
  }
  derived = derived || !ok;
  for (const auto& t : outs) {
    if (!t.is_cuda()) continue;
    if (derived) unknown.insert(storage_ptr(t));
    else if (!info.inplace) unknown.erase(storage_ptr(t));  // a partial in-place write leaves it unknown
  }
  if (ok && (!derived || small)) {
    torch::jit::Stack st;
    st.reserve(args.size());
    for (const auto& a : args) st.push_back(to_host(a));
    op.callBoxed(&st);
    if (!zeroed.empty()) {  // what this wrote is no longer zeros: the outputs, and any argument it writes
      const auto& sargs = op.schema().arguments();
      for (size_t i = 0; i < args.size() && i < sargs.size(); i++)
        if (sargs[i].alias_info() && sargs[i].alias_info()->isWrite())
          each_tensor(args[i], [&](const at::Tensor& t) {
            if (t.defined() && t.is_cuda()) forget_zero(t);
          });
      for (const auto& t : outs)
        if (t.is_cuda()) forget_zero(t);
    }
    if (!info.inplace) {  // in-place and out= variants wrote through the aliases already
      std::vector<at::Tensor> res;
      for (const auto& r : st) each_tensor(r, [&](const at::Tensor& t) { res.push_back(t); });
      for (size_t i = 0; i < outs.size() && i < res.size(); i++)
        if (outs[i].is_cuda()) host_alias(outs[i]).copy_(res[i]);
    }
    counts[0]++;
  } else if (!info.inplace) {  // fresh outputs: their whole storage
    for (const auto& t : outs)
      if (t.is_cuda()) zero_fill(t);
    counts[1]++;
  }
}

// After the operation ran: its small host-backed device outputs, unless it returned views of its inputs.
void after(const c10::OperatorHandle& op, const OpInfo& info, const std::vector<c10::IValue>& args,
           const torch::jit::Stack& stack) {
  size_t nret = op.schema().returns().size();
  std::vector<at::Tensor> outs;
  bool large = false, odd = false;
  for (auto it = stack.end() - nret; it != stack.end(); ++it)
    each_tensor(*it, [&](const at::Tensor& t) {
      if (!t.defined()) return;
      if (t.is_cuda() && !plain_cuda(t)) odd = true;
      else if (t.is_cuda() && static_cast<int64_t>(t.storage().nbytes()) > max_bytes) large = true;
      outs.push_back(t);
    });
  if (large || odd || outs.empty()) return;  // the common large case, decided before pausing
  if (info.view) {  // a view shares its input's bytes: nothing to do; a copy made instead is an ordinary result
    bool aliased = true;
    for (const auto& t : outs) {
      bool shares = false;
      for (const auto& a : args)
        each_tensor(a, [&](const at::Tensor& x) {
          if (x.defined() && x.has_storage() && t.has_storage() && x.storage().is_alias_of(t.storage()))
            shares = true;
        });
      aliased = aliased && shares;
    }
    if (aliased) return;
  }
  bool any_dev = false;
  for (const auto& t : outs) any_dev = any_dev || t.is_cuda();
  if (!any_dev || shim().captures()) return;  // a captured operation runs at replay
  Paused p;
  for (const auto& t : outs)
    if (t.is_cuda() && !backed(t)) return;
  shadow(op, info, args, outs);
}

void fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard guard(kKey);  // below this key; nested calls do not come back here
  if (std::this_thread::get_id() != owner) {  // autograd's threads inherit the key; the state is not shared
    op.callBoxed(stack);
    return;
  }
  const OpInfo& info = info_of(op);
  if (info.skip) {
    op.callBoxed(stack);
    if (info.fresh && !stack->empty() && stack->back().isTensor()) {
      const at::Tensor& t = stack->back().toTensor();
      if (plain_cuda(t)) unknown.erase(storage_ptr(t));
    }
    return;
  }
  size_t nargs = op.schema().arguments().size();
  std::vector<c10::IValue> args(stack->end() - nargs, stack->end());
  op.callBoxed(stack);  // the operation's own errors reach the program
  try {                 // the emulator's bookkeeping never does
    after(op, info, args, *stack);
  } catch (const std::exception&) {
    counts[2]++;
  }
}

// Operations that always return views of their inputs need nothing from the shadow (a view shares its
// input's bytes and knownness), so they fall through its key and skip the boxing that the fallback costs
// them (about a microsecond of charged host time per call; a Llama layer's forward makes about 14 such
// calls). Composite ones (reshape, contiguous, to) may copy instead and stay with the fallback. Ops
// registered after the shadow is enabled stay with the fallback too.
std::vector<c10::RegistrationHandleRAII> view_kernels;

void let_views_through() {
  auto& d = c10::Dispatcher::singleton();
  for (const auto& name : d.getAllOpNames()) {
    auto op = d.findOp(name);
    if (!op || !op->hasSchema() || op->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd))
      continue;
    const c10::FunctionSchema& s = op->schema();
    bool views = !s.returns().empty();
    for (const auto& r : s.returns())
      views = views && r.alias_info() && !r.alias_info()->isWrite() && r.type()->kind() == c10::TypeKind::TensorType;
    for (const auto& a : s.arguments()) views = views && !(a.alias_info() && a.alias_info()->isWrite());
    if (views)
      view_kernels.push_back(d.registerImpl(name, kKey, c10::KernelFunction::makeFallthrough(), std::nullopt,
                                            nullptr, "timewarp shadow: a view of an input"));
  }
}

bool unknown_input(const at::Tensor& t) { return t.defined() && t.is_cuda() && unknown.count(storage_ptr(t)); }
bool unknown_input(const std::optional<at::Tensor>& t) { return t.has_value() && unknown_input(*t); }
bool unknown_input(const at::ITensorListRef& ts) {
  for (const at::Tensor& t : ts)
    if (unknown_input(t)) return true;
  return false;
}
template <class T>
bool unknown_input(const T&) {
  return false;
}

// What shadow() decides for a floating-point result computed from an unknown input (every activation of a
// batch-1 decode step): unknown, zero-filled. Decided here without boxing the arguments or pausing, which
// cost more than the decision, and the fill, when the block does not hold its zeros already, paused.
template <class... Args>
bool unknown_float(const OpInfo& info, const at::Tensor& r, const Args&... args) {
  if (info.skip || info.view || info.inplace || !(r.is_floating_point() || r.is_complex())) return false;
  if (!(unknown_input(args) || ...) || shim().captures() || !backed(r)) return false;
  unknown.insert(storage_ptr(r));
  zero_fill(r);
  counts[1]++;
  return true;
}

// The operations a transformers forward calls most (about half of a Llama layer's), as typed kernels on
// the shadow's key: the call goes below the key unboxed, and only a small device result (the rare case in
// a prefill) is boxed for after(), paused. Through the boxed fallback every call paid the boxing of its
// arguments and the unboxing below, about a microsecond of charged host time each that the real program
// does not spend. Op is an at::_ops struct, whose schema is the dispatcher's own C++ signature.
template <class Op, class Sig = typename Op::schema>
struct Typed;

template <class Op, class... Args>
struct Typed<Op, at::Tensor(Args...)> {
  static const c10::OperatorHandle& handle() {
    static const c10::OperatorHandle h = c10::Dispatcher::singleton().findSchemaOrThrow(Op::name, Op::overload_name);
    return h;
  }
  static at::Tensor call(Args... args) {
    c10::impl::ExcludeDispatchKeyGuard guard(kKey);
    at::Tensor r = Op::call(args...);
    if (std::this_thread::get_id() != owner || !plain_cuda(r) || static_cast<int64_t>(r.storage().nbytes()) > max_bytes)
      return r;  // the common case: no result of the shadow's size on the device
    try {
      const OpInfo& info = info_of(handle());
      if (unknown_float(info, r, args...)) return r;
      Paused p;
      torch::jit::Stack st = c10::impl::boxArgs<Args...>(args...);
      std::vector<c10::IValue> argv(st.begin(), st.end());
      st.clear();
      st.emplace_back(r);
      if (!info.skip) after(handle(), info, argv, st);
    } catch (const std::exception&) {
      counts[2]++;
    }
    return r;
  }
};

template <class Op>
void typed(torch::Library& m) {
  std::string name = std::string(Op::name).substr(6);  // without "aten::"
  if (*Op::overload_name) name = name + "." + Op::overload_name;
  m.impl(name.c_str(), TORCH_FN(Typed<Op>::call));
}

bool enable(bool on) {
  if (on && !shim().ok()) return false;
  if (on && view_kernels.empty()) let_views_through();
  owner = std::this_thread::get_id();
  c10::impl::tls_set_dispatch_key_included(kKey, on);
  return true;
}

void configure(int64_t max_b, int64_t unknown_b) {
  max_bytes = max_b;
  unknown_bytes = unknown_b;
}

std::vector<int64_t> stats() {
  return {counts[0], counts[1], counts[2], static_cast<int64_t>(unknown.size()), counts[3]};
}

}  // namespace

TORCH_LIBRARY(timewarp_shadow, m) {
  m.def("enable(bool on) -> bool", &enable);
  m.def("configure(int max_bytes, int unknown_bytes) -> ()", &configure);
  m.def("stats() -> int[]", &stats);
}

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&fallback>());
}

TORCH_LIBRARY_IMPL(aten, TESTING_ONLY_GenericMode, m) {
  namespace o = at::_ops;
  typed<o::mul_Tensor>(m);
  typed<o::add_Tensor>(m);
  typed<o::sub_Tensor>(m);
  typed<o::div_Tensor>(m);
  typed<o::mul_Scalar>(m);
  typed<o::add_Scalar>(m);
  typed<o::linear>(m);
  typed<o::matmul>(m);
  typed<o::mm>(m);
  typed<o::bmm>(m);
  typed<o::to_dtype>(m);
  typed<o::to_device>(m);
  typed<o::to_dtype_layout>(m);
  typed<o::cat>(m);
  typed<o::rsqrt>(m);
  typed<o::pow_Tensor_Scalar>(m);
  typed<o::mean_dim>(m);
  typed<o::neg>(m);
  typed<o::silu>(m);
  typed<o::gelu>(m);
  typed<o::softmax_int>(m);
  typed<o::scaled_dot_product_attention>(m);
  typed<o::embedding>(m);
  typed<o::reshape>(m);
  typed<o::contiguous>(m);
  typed<o::sin>(m);
  typed<o::cos>(m);
  typed<o::exp>(m);
  typed<o::tanh>(m);
  typed<o::sigmoid>(m);
}
