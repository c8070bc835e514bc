#include "brainevent/common.h"

// @BE axpy arg arg ret attr.a:float32
void axpy(const BE::Tensor x, const BE::Tensor y, BE::Tensor out, float a) {
    const float* xs = x.data_ptr<float>();
    const float* ys = y.data_ptr<float>();
    float* o = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) o[i] = a * xs[i] + ys[i];
}
