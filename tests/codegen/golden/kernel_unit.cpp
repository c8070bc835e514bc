#line 1 "my_kernels.cpp"
#include "brainevent/common.h"

// @BE vector_add arg arg ret stream
void vector_add(const BE::Tensor a, const BE::Tensor b, BE::Tensor out, int64_t stream) {}

void scale_by(const BE::Tensor x, BE::Tensor out, float scale_factor, const int64_t& count, int64_t stream) {}
#line 1 "<brainevent entry points>"
#include "brainevent/entry.h"
BE_ENTRY const char* be_entry_vector_add(const ::BE::Tensor* t, void* const* a, int64_t stream) {
  (void)t; (void)a; (void)stream;
  return ::BE::detail::guarded_call([&] { ::vector_add(t[0], t[1], t[2], ::BE::detail::stream_as<int64_t>(stream)); });
}
BE_ENTRY const char* be_entry_scale_by(const ::BE::Tensor* t, void* const* a, int64_t stream) {
  (void)t; (void)a; (void)stream;
  return ::BE::detail::guarded_call([&] { ::scale_by(t[0], t[1], ::BE::detail::load_attr<float>(a[0]), ::BE::detail::load_attr<const int64_t&>(a[1]), ::BE::detail::stream_as<int64_t>(stream)); });
}
