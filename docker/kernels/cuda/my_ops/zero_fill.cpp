#include <cuda_runtime.h>
#include "brainevent/common.h"

// @BE zero_fill ret stream
void zero_fill(BE::Tensor out, int64_t stream) {
    BE_CUDA_CHECK(cudaMemsetAsync(out.data_ptr(), 0, out.nbytes(), (cudaStream_t)stream));
}
