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
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "brainevent/check.h"  // what it uses, whatever common.h left out
#include "brainevent/common.h"
#include "brainevent/cuda_kernel_table.h"
#include "brainevent/xla_ffi.h"

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

// Runs kernel `id` on `stream` with XLA's buffers (inputs, then results): once, or once per
// batch element for a kernel prepared for one.
void run(int64_t id, const XLA_FFI_Buffer* const* buffers, int64_t count, int64_t stream) {
  Kernel* k = &registered<Kernel>(id, "GPU kernel",
                                  "trace the function that calls it again (jax.jit retraces in a new process) "
                                  "to register it");
  BE_CHECK(k->operands == count) << "kernel " << k->entry << " was prepared for " << k->operands
                                 << " arrays, the call passes " << count;
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

XLA_FFI_Error* handle(XLA_FFI_CallFrame* frame) {
  // Command-buffer compatible: every kernel is loaded up front (be_cubin_preload), so a
  // launch can be captured in a CUDA graph.
  if (auto* query = BE::ffi::metadata_query(frame)) {
    return BE::ffi::answer_metadata(frame, query, XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE);
  }
  if (frame->stage != XLA_FFI_ExecutionStage_EXECUTE) return nullptr;  // nothing to prepare
  const int64_t id = BE::ffi::int64_attr(frame, "kernel_id");
  if (id < 0) return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, "expected an int64 attribute kernel_id");
  const int64_t n_args = frame->args.size, count = n_args + frame->rets.size;
  if (count > kMaxOperands) return fail(frame, XLA_FFI_Error_Code_INVALID_ARGUMENT, "too many arrays");
  const XLA_FFI_Buffer* buffers[kMaxOperands];
  for (int64_t i = 0; i < count; ++i) {
    buffers[i] = static_cast<const XLA_FFI_Buffer*>(i < n_args ? frame->args.args[i] : frame->rets.rets[i - n_args]);
  }
  void* stream = nullptr;
  if (XLA_FFI_Error* error = BE::ffi::stream_of(frame, &stream)) return error;
  try {
    run(id, buffers, count, reinterpret_cast<int64_t>(stream));
  } catch (const std::exception& e) {  // nothing may escape to XLA: it would end the process
    return fail(frame, XLA_FFI_Error_Code_INTERNAL, e.what());
  }
  return nullptr;
}

}  // namespace
}  // namespace be_cubin

// ---- called from Python through ctypes, once per kernel ----

// config: grid x y z, block x y z. params: (kind, value, size) triplets. shapes: per operand,
// its rank then its dims, the shape of one batch element (n_shapes 0: not batched). Returns 0,
// or 1 if the id is already registered (same content: nothing to do).
BE_LAUNCHER_EXPORT int be_cubin_register(int64_t id, const char* entry, const int64_t* config,
                                         int64_t cooperative, int64_t operands, const int64_t* params,
                                         int64_t n_params, const int64_t* shapes, int64_t n_shapes) {
  using be_cubin::Kernel;
  return be_cuda_launch::register_kernel<Kernel>(id, [&] {
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
  });
}

BE_LAUNCHER_EXPORT void be_cubin_add_image(int64_t id, int64_t cc, const char* data, int64_t size,
                                           int64_t shared_mem) {
  be_cuda_launch::add_image<be_cubin::Kernel>(id, cc, data, size, static_cast<unsigned>(shared_mem));
}

BE_LAUNCHER_EXPORT const char* be_cubin_preload(int64_t id) {
  return be_cuda_launch::preload<be_cubin::Kernel>(id, /*need_driver=*/false);
}

// The handler brainevent registers on the CUDA platform (see the comment at the top).
BE_LAUNCHER_EXPORT XLA_FFI_Error* be_cubin_handler(XLA_FFI_CallFrame* frame) { return be_cubin::handle(frame); }
