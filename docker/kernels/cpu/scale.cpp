#include "brainevent/common.h"

// @BE scale arg ret attr.factor:float32
void scale(const BE::Tensor x, BE::Tensor out, float factor) {
    const float* px = x.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) po[i] = px[i] * factor;
}
