#pragma once
// Shared by the .cu files of this module: a change here rebuilds both.
__device__ inline float twice(float v) { return 2.0f * v; }
__device__ inline float fma_scaled(float a, float x, float y) { return fmaf(a, x, y); }
