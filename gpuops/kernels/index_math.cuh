// Index arithmetic shared by every Conv Explorer kernel.
// gpuops/indexmath.py holds the NumPy twins of these functions; a test keeps them equal.
#pragma once

// Output size of a sliding window along one axis (PyTorch's formula):
//   out = floor((size + pad_before + pad_after - dilation * (k - 1) - 1) / stride) + 1
__device__ __forceinline__ int window_count(int size, int pad_before, int pad_after,
                                            int k, int stride, int dilation) {
    return (size + pad_before + pad_after - dilation * (k - 1) - 1) / stride + 1;
}

// Reflect an input coordinate i (which may lie up to size-1 cells outside [0, size))
// back into the image, without repeating the edge cell (PyTorch ReflectionPad2d):
//   i = -1 -> 1,  i = -2 -> 2,  i = size -> size - 2.
// This is the abs()-based mapping of PyTorch's CUDA kernel, written for i = o - pad:
//   |i| - |i - (size-1)| - i + (size-1)
// Interior:   i - (size-1-i) - i + (size-1)        = i
// Left edge:  -i - (size-1-i) - i + (size-1)       = -i
// Right edge: i - (i-(size-1)) - i + (size-1)      = 2(size-1) - i
__device__ __forceinline__ int reflect_index(int i, int size) {
    return abs(i) - abs(i - (size - 1)) - i + (size - 1);
}
