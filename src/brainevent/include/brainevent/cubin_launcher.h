// brainevent/cubin_launcher.h - the launcher that runs precompiled GPU kernels (cubins) on
// XLA's stream, for kernels whose parameters are plain device pointers and scalars
// (Triton's calling convention; NVRTC's cuda_kernel), and of Numba-CUDA kernels, whose array
// parameters are laid out from extents and strides (kExtent, kStride). Internal: the one header of a launcher
// library, compiled by the host compiler alone (no nvcc, no CUDA headers: the driver API is
// dlopen'ed, see cuda_kernel_table.h).
//
// be_cubin_handler is the XLA FFI handler that calls go to, registered on the CUDA platform
// and command-buffer compatible: it reads XLA's call frame itself (xla/ffi/api/c_api.h), the
// kernel_id attribute, the buffers and the stream. brainevent appends one generic entry per
// operand count, be_cubin::launch_kernel, which the loader needs and only refuses: that
// library is built for the CPU, where no GPU kernel can run.
#pragma once

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/cuda_kernel_table.h"
#include "brainevent/xla_ffi.h"

BE_LAUNCHER_EXPORT const char* be_cubin_register_blob(int64_t id, const char* blob, int64_t size);
BE_LAUNCHER_EXPORT const char* be_cubin_preload(int64_t id);

namespace be_cubin {
namespace {

using namespace be_cuda_launch;

// One kernel parameter: a device pointer to an operand (checked to be aligned), a pointer to a
// scratch operand (rounded up to the alignment), a scalar of `size` bytes, a null pointer, or,
// read from the call's operand `value` (after any batch dims), its dim `size` (-1: its element
// count) or the byte stride along that dim of the dense row-major array (Numba-CUDA's array
// parameters). Keep in step with launchers/cubin.py.
enum Kind : int64_t { kOperand = 0, kScalar = 1, kNull = 2, kScratch = 3, kExtent = 4, kStride = 5 };
struct Param {
  int64_t kind, value, size;  // operand index or raw scalar bits; alignment or scalar size
};

struct Kernel : KernelBase {
  int64_t operands = 0;
  std::vector<Param> params;
  // Per operand, the shape of one batch element; empty: the kernel takes whole operands. A
  // kernel prepared for one element runs once per element of the call's leading (batch) dims,
  // which XLA may have split across devices; an operand whose batch dim is 1 is broadcast.
  std::vector<std::vector<int64_t>> element_shapes;
};

constexpr int kMaxParams = 512;
constexpr int kMaxBatchRank = 8;
constexpr int64_t kMaxOperands = 256;

// The batch of a call: its dims, and each operand's byte stride along each (0: broadcast).
struct Batch {
  int rank = 0;
  int64_t count = 1;
  int64_t dims[kMaxBatchRank] = {};
  int64_t strides[kMaxOperands][kMaxBatchRank] = {};
};

// Fills `b` from the buffers' leading dims (those before each operand's element shape).
void batch_of(const Kernel& k, const XLA_FFI_Buffer* const* buffers, int64_t count, Batch* b) {
  BE_CHECK(static_cast<int64_t>(k.element_shapes.size()) == count) << "kernel " << k.entry << " has "
      << k.element_shapes.size() << " element shapes for " << count << " arrays";
  for (int64_t i = 0; i < count; ++i) {
    const XLA_FFI_Buffer& buf = *buffers[i];
    const std::vector<int64_t>& shape = k.element_shapes[i];
    const int64_t rank = buf.rank - static_cast<int64_t>(shape.size());
    bool same = rank >= 0 && rank <= kMaxBatchRank && (i == 0 || rank == b->rank);
    for (size_t d = 0; same && d < shape.size(); ++d) same = buf.dims[rank + d] == shape[d];
    BE_CHECK(same) << "kernel " << k.entry << ": array " << i << " of rank " << buf.rank
                   << " does not end with the element shape it was prepared for (rank " << shape.size()
                   << "), after the batch dims of the other arrays";
    b->rank = static_cast<int>(rank);
    int64_t stride = static_cast<int64_t>(BE::element_size(static_cast<BE::DType>(buf.dtype)));
    for (int64_t extent : shape) stride *= extent;
    for (int d = b->rank - 1; d >= 0; --d) {
      b->strides[i][d] = buf.dims[d] == 1 ? 0 : stride;
      stride *= buf.dims[d];
      if (buf.dims[d] != 1) {
        BE_CHECK(b->dims[d] <= 1 || b->dims[d] == buf.dims[d])
            << "kernel " << k.entry << ": batch dim " << d << " is " << b->dims[d] << " in one array and "
            << buf.dims[d] << " in array " << i;
        b->dims[d] = buf.dims[d];
      } else if (b->dims[d] == 0) {
        b->dims[d] = 1;
      }
    }
  }
  for (int d = 0; d < b->rank; ++d) b->count *= b->dims[d];
}

// Runs kernel `id` on `stream` with the call's buffers (the kernel's inputs, then the results):
// once, or once per batch element for a kernel prepared for one.
void run(int64_t id, const XLA_FFI_CallFrame* frame, int64_t stream) {
  Kernel* k = &registered<Kernel>(id, "GPU kernel",
                                  "trace the function that calls it again (jax.jit retraces in a new process) "
                                  "to register it");
  const int64_t n_args = BE::ffi::kernel_inputs(frame, k->operands), count = n_args + frame->rets.size;
  BE_CHECK(n_args >= 0 && count <= kMaxOperands) << "kernel " << k->entry << " was prepared for " << k->operands
                                                 << " arrays, the call passes " << frame->args.size + frame->rets.size;
  const XLA_FFI_Buffer* buffers[kMaxOperands];
  for (int64_t i = 0; i < count; ++i) {
    buffers[i] = static_cast<const XLA_FFI_Buffer*>(i < n_args ? frame->args.args[i] : frame->rets.rets[i - n_args]);
  }
  const int n = static_cast<int>(k->params.size());
  BE_CHECK(n <= kMaxParams) << "kernel " << k->entry << " has too many parameters (" << n << ")";
  if (static_cast<uint64_t>(k->grid[0]) * k->grid[1] * k->grid[2] == 0) return;  // nothing to do
  static thread_local Batch batch;  // large: kept off the stack
  batch.rank = 0;
  batch.count = 1;
  if (!k->element_shapes.empty()) {
    batch = Batch();
    batch_of(*k, buffers, count, &batch);
  }
  uint64_t slots[kMaxParams];
  void* pointers[kMaxParams];
  for (int64_t element = 0; element < batch.count; ++element) {
    for (int i = 0; i < n; ++i) {
      const Param& p = k->params[i];
      uint64_t slot = 0;
      if (p.kind == kOperand || p.kind == kScratch) {
        BE_CHECK(p.value >= 0 && p.value < count) << "parameter " << i << " names operand " << p.value;
        uint64_t address = reinterpret_cast<uint64_t>(buffers[p.value]->data);
        for (int64_t d = batch.rank - 1, rest = element; d >= 0; --d) {
          address += static_cast<uint64_t>(rest % batch.dims[d] * batch.strides[p.value][d]);
          rest /= batch.dims[d];
        }
        const uint64_t align = p.size > 0 ? static_cast<uint64_t>(p.size) : 1;
        if (p.kind == kScratch) {
          address = (address + align - 1) / align * align;
        } else {
          // The kernel was compiled assuming this alignment; a misaligned buffer would be read wrongly.
          BE_CHECK(address % align == 0) << "kernel " << k->entry << ": array " << p.value
                                         << " is not aligned to " << align << " bytes";
        }
        slot = address;
      } else if (p.kind == kScalar) {
        slot = static_cast<uint64_t>(p.value);  // little-endian: the low `size` bytes are the value
      } else if (p.kind == kExtent || p.kind == kStride) {
        BE_CHECK(p.value >= 0 && p.value < count) << "parameter " << i << " names operand " << p.value;
        const XLA_FFI_Buffer& b = *buffers[p.value];
        const int64_t rank = b.rank - batch.rank;
        BE_CHECK(p.size >= -1 && p.size < rank) << "kernel " << k->entry << ": array " << p.value << " has rank "
                                                << rank << ", the kernel reads its dim " << p.size;
        int64_t value = 1, from = 0, to = rank;  // an extent of -1: every dim, the element count
        if (p.kind == kExtent && p.size >= 0) from = p.size, to = p.size + 1;
        if (p.kind == kStride) from = p.size + 1, value = static_cast<int64_t>(BE::element_size(static_cast<BE::DType>(b.dtype)));
        for (int64_t d = from; d < to; ++d) value *= b.dims[batch.rank + d];
        slot = static_cast<uint64_t>(value);
      }
      slots[i] = slot;
      pointers[i] = &slots[i];
    }
    launch(*k, stream, pointers);
  }
}

// The generic entry of the CPU-built library (never registered with XLA).
[[maybe_unused]] void launch_kernel(int64_t, const BE::Tensor* const*, int64_t) {
  BE_FAIL() << "GPU kernels launch through be_cubin_handler on the CUDA platform, not on the CPU";
}

// ---- the handler -----------------------------------------------------------------------------

XLA_FFI_Error* fail(const XLA_FFI_CallFrame* frame, XLA_FFI_Error_Code code, const std::string& what) {
  return BE::ffi::make_error(frame, code, ("GPU kernel launch: " + what).c_str());
}

// The attribute `name` if it has type `type`, or nullptr.
const void* attribute(const XLA_FFI_CallFrame* frame, const char* name, XLA_FFI_AttrType type) {
  const size_t n = std::strlen(name);
  for (int64_t i = 0; i < frame->attrs.size; ++i) {
    const XLA_FFI_ByteSpan* found = frame->attrs.names[i];
    if (found->len == n && std::memcmp(found->ptr, name, n) == 0) {
      return frame->attrs.types[i] == type ? frame->attrs.attrs[i] : nullptr;
    }
  }
  return nullptr;
}

// The kernel_id attribute (an int64 scalar, as launchers/cubin.py passes it), or -1.
int64_t kernel_id(const XLA_FFI_CallFrame* frame) {
  const auto* scalar = static_cast<const XLA_FFI_Scalar*>(attribute(frame, "kernel_id", XLA_FFI_AttrType_SCALAR));
  return scalar == nullptr || scalar->dtype != XLA_FFI_DataType_S64 ? -1 : *static_cast<const int64_t*>(scalar->value);
}

XLA_FFI_Error* handle(XLA_FFI_CallFrame* frame) {
  // Command-buffer compatible: every kernel is loaded up front (be_cubin_preload), so a
  // launch can be captured in a CUDA graph.
  if (auto* query = BE::ffi::metadata_query(frame)) {
    return BE::ffi::answer_metadata(frame, query, XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);
  }
  const bool execute = frame->stage == XLA_FFI_ExecutionStage_EXECUTE;
  if (!execute && frame->stage != XLA_FFI_ExecutionStage_INSTANTIATE) return nullptr;  // nothing to prepare
  const int64_t id = kernel_id(frame);
  if (id < 0) return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, "expected an int64 attribute kernel_id");
  // A kernel that travels with its program (jax.export) is registered from its `kernel` attribute
  // where this process has not traced it. When XLA instantiates the call, the kernel is loaded on
  // the active devices, before a CUDA graph captures a launch.
  const auto* blob = static_cast<const XLA_FFI_ByteSpan*>(attribute(frame, "kernel", XLA_FFI_AttrType_STRING));
  if (blob != nullptr && table<Kernel>().find(id) == nullptr) {
    const std::string error = be_cubin_register_blob(id, blob->ptr, static_cast<int64_t>(blob->len));
    if (!error.empty()) return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, error);
  }
  if (!execute) {
    const std::string error = be_cubin_preload(id);
    return error.empty() ? nullptr : fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, error);
  }
  XLA_FFI_Stream_Get_Args stream;
  std::memset(&stream, 0, sizeof(stream));
  stream.struct_size = XLA_FFI_Stream_Get_Args_STRUCT_SIZE;
  stream.ctx = frame->ctx;
  if (XLA_FFI_Error* error = frame->api->XLA_FFI_Stream_Get(&stream)) return error;
  try {
    run(id, frame, reinterpret_cast<int64_t>(stream.stream));
  } catch (const std::exception& e) {  // nothing may escape to XLA: it would end the process
    return fail(frame, XLA_FFI_Error_Code_INTERNAL, e.what());
  }
  return nullptr;
}

}  // namespace
}  // namespace be_cubin

// ---- called from Python through ctypes, once per kernel ----

// config: grid x y z, block x y z. params: (kind, value, size) triplets. shapes: per operand,
// its rank then its dims, the shape of one batch element (n_shapes 0: not batched).
namespace be_cubin {
namespace {
std::unique_ptr<Kernel> make_kernel(const char* entry, const int64_t* config, int64_t cooperative, int64_t operands,
                                    const int64_t* params, int64_t n_params, const int64_t* shapes, int64_t n_shapes) {
  auto k = std::make_unique<Kernel>();
  be_cuda_launch::set_launch(*k, entry, config, cooperative);
  k->operands = operands;
  for (int64_t i = 0; i < n_params; ++i) {
    k->params.push_back({params[3 * i], params[3 * i + 1], params[3 * i + 2]});
  }
  for (int64_t at = 0; at < n_shapes; at += shapes[at] + 1) {
    k->element_shapes.emplace_back(shapes + at + 1, shapes + at + 1 + shapes[at]);
  }
  return k;
}
}  // namespace
}  // namespace be_cubin

BE_LAUNCHER_EXPORT const char* be_cubin_preload(int64_t id) {
  return be_cuda_launch::preload<be_cubin::Kernel>(id, /*need_driver=*/false);
}

// The handler brainevent registers on the CUDA platform (see the comment at the top).
BE_LAUNCHER_EXPORT XLA_FFI_Error* be_cubin_handler(XLA_FFI_CallFrame* frame) { return be_cubin::handle(frame); }

// A kernel as launchers/cubin.py's kernel_blob writes it: int64 fields (the format, grid,
// block, cooperative, operand count, number of params, the params' triplets, the element
// shapes' length and values, the entry's length, the number of images, each image's compute
// capability, shared memory and size), then the entry and the images. A blob comes from a
// program, which is data: every count is checked against its size before anything is kept.
// Registers it under `id` (whole: a launch never sees it without its images) unless present,
// and loads it on the active devices; "" or the error.
BE_LAUNCHER_EXPORT const char* be_cubin_register_blob(int64_t id, const char* blob, int64_t size) {
  int64_t at = 0;
  bool ok = size >= 0;
  auto ints = [&](int64_t count, int64_t limit) {  // `count` int64 fields, if that many are there
    std::vector<int64_t> v;
    ok = ok && count >= 0 && count <= limit && count <= (size - at) / 8;
    for (int64_t i = 0; ok && i < count; ++i, at += 8) v.push_back(0), std::memcpy(&v.back(), blob + at, 8);
    return v;
  };
  auto next = [&](int64_t limit) {  // one field in [0, limit]
    const std::vector<int64_t> v = ints(1, 1);
    ok = ok && v[0] >= 0 && v[0] <= limit;
    return ok ? v[0] : 0;
  };
  if (next(INT64_MAX) != 1) return "the kernel was written by another version of brainevent (format); export it again";
  const std::vector<int64_t> head = ints(8, 8);  // grid, block, cooperative, operands
  const std::vector<int64_t> params = ints(3 * next(be_cubin::kMaxParams), 3 * be_cubin::kMaxParams);
  const std::vector<int64_t> shapes = ints(next(INT64_MAX), INT64_MAX);
  for (size_t s = 0; ok && s < shapes.size(); s += static_cast<size_t>(shapes[s]) + 1) {
    ok = shapes[s] >= 0 && static_cast<size_t>(shapes[s]) < shapes.size() - s;
  }
  const int64_t entry_size = next(INT64_MAX);
  const std::vector<int64_t> images = ints(3 * next(size / 24), INT64_MAX);  // cc, shared memory, size
  int64_t rest = size - at - entry_size;
  for (size_t i = 0; ok && i < images.size(); i += 3) {
    ok = images[i + 1] >= 0 && images[i + 1] <= UINT32_MAX && images[i + 2] >= 0 && (rest -= images[i + 2]) >= 0;
  }
  if (!ok || rest != 0 || head[7] < 0 || head[7] > be_cubin::kMaxOperands) {
    return "the kernel attribute is malformed (its counts do not match its size)";
  }
  const std::string entry(blob + at, static_cast<size_t>(entry_size));
  const char* code = blob + at + entry_size;
  const int added = be_cuda_launch::register_kernel<be_cubin::Kernel>(id, [&] {
    auto k = be_cubin::make_kernel(entry.c_str(), head.data(), head[6], head[7], params.data(),
                                   static_cast<int64_t>(params.size() / 3), shapes.data(),
                                   static_cast<int64_t>(shapes.size()));
    for (size_t i = 0; i < images.size(); code += images[i + 2], i += 3) {
      k->images[static_cast<int>(images[i])] = {std::string(code, static_cast<size_t>(images[i + 2])),
                                                static_cast<unsigned>(images[i + 1])};
    }
    return k;
  });
  return added == 0 ? be_cubin_preload(id) : "";  // present already: the same content (the id is its digest)
}
