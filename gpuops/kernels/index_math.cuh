// Index arithmetic shared by every Conv Explorer kernel: each formula lives here once.
// gpuops/index_math.py holds the NumPy twin of every function; a test keeps the two equal.
#pragma once

// Output size of a sliding window along one axis (PyTorch's formula):
//   out = floor((size + pad_before + pad_after - dilation * (k - 1) - 1) / stride) + 1
__device__ __forceinline__ int window_count(int size, int pad_before, int pad_after,
                                            int k, int stride, int dilation) {
    return (size + pad_before + pad_after - dilation * (k - 1) - 1) / stride + 1;
}

// The input coordinate that output o reads at tap k, along one axis:
//   i = o * stride - pad + k * dilation
// It may lie in the padding (i < 0 or i >= size): the caller applies the padding rule.
__device__ __forceinline__ int input_coord(int o, int stride, int pad, int k, int dilation) {
    return o * stride - pad + k * dilation;
}

// The inverse, for kernels that gather: which output o reads input coordinate i at tap k?
// Solve i = o * stride - pad + k * dilation for o; there is one only when the division is
// exact and 0 <= o < count. Returns -1 when no output reads i through tap k.
__device__ __forceinline__ int output_coord(int i, int stride, int pad, int k, int dilation,
                                            int count) {
    const int t = i + pad - k * dilation;       // = o * stride
    if (t < 0) return -1;
    const unsigned o = (unsigned)t / (unsigned)stride;   // t >= 0: the cheaper unsigned division
    return (o * (unsigned)stride == (unsigned)t && o < (unsigned)count) ? (int)o : -1;
}

// Reflect an input coordinate i (which may lie up to size-1 cells outside [0, size))
// back into the image, without repeating the edge cell (PyTorch ReflectionPad2d):
//   i = -1 -> 1,  i = -2 -> 2,  i = size -> size - 2.
// This is the abs()-based mapping of PyTorch's CUDA kernel:
//   |i| - |i - (size-1)| - i + (size-1)
// Interior:   i - (size-1-i) - i + (size-1)        = i
// Left edge:  -i - (size-1-i) - i + (size-1)       = -i
// Right edge: i - (i-(size-1)) - i + (size-1)      = 2(size-1) - i
__device__ __forceinline__ int reflect_index(int i, int size) {
    return abs(i) - abs(i - (size - 1)) - i + (size - 1);
}

// Every window position (oh, ow) and tap (ki, kj) that reads input cell (ih, iw): calls
// f(ki, kj, oh, ow) for each, in a fixed order. This is the loop of every GATHER kernel (fold,
// the input gradient): each input cell sums what the windows covering it hold.
template <typename F>
__device__ __forceinline__ void for_each_window(int ih, int iw, int KH, int KW, int H_out, int W_out,
                                                int stride_h, int stride_w, int pad_h, int pad_w,
                                                int dil_h, int dil_w, F f) {
    for (int ki = 0; ki < KH; ++ki) {
        const int oh = output_coord(ih, stride_h, pad_h, ki, dil_h, H_out);
        if (oh < 0) continue;
        for (int kj = 0; kj < KW; ++kj) {
            const int ow = output_coord(iw, stride_w, pad_w, kj, dil_w, W_out);
            if (ow >= 0) f(ki, kj, oh, ow);
        }
    }
}

// The loop of every ROW kernel (reflect pad, unfold, fold, ...): a block is blockDim.y thread
// rows; block b takes rows b*blockDim.y .. on its first pass, then jumps by the whole grid
// (a capped grid walks all rows). gpuops/launch.py's RowMap describes the same walk.
#define FOR_EACH_ROW(row, rows) \
    for (unsigned row = blockIdx.x * blockDim.y + threadIdx.y; row < (rows); row += gridDim.x * blockDim.y)

// The padded coordinates that copy input coordinate i along one axis (numbered like i: the
// first input cell is 0, the padding before it is negative), written to v; returns how many:
//   i itself,
//   -i            its mirror before the start, there when 1 <= i <= pad_before,
//   2(size-1)-i   its mirror past the end, there when size-1-pad_after <= i <= size-2.
// reflect_index maps each of them back to i; the edge cells 0 and size-1 have no mirror of
// their own (reflection does not repeat the edge). NumPy twin: gpuops.index_math.reflect_copies.
__device__ __forceinline__ int reflect_copies(int i, int size, int pad_before, int pad_after, int v[3]) {
    int count = 0;
    v[count++] = i;
    if (i >= 1 && i <= pad_before) v[count++] = -i;
    if (i <= size - 2 && i >= size - 1 - pad_after) v[count++] = 2 * (size - 1) - i;
    return count;
}

// ---------------------------------------------------------------------------------------
// Output stores. Kernels write their results through store() / store4(), always with the
// element's index from the start of the output array. In a normal build
// these are plain stores. A test build (-DCONV_EXPLORER_TRACE) also records, for every
// element, WHICH THREAD wrote it, so the test suite can check the app's picture ("block b,
// thread t computed this pixel") against the kernel that really ran.
// ---------------------------------------------------------------------------------------
#ifdef CONV_EXPLORER_TRACE
__device__ unsigned long long* trace_writer;   // one entry per output element (set by the test)
__device__ unsigned int trace_dims[6];         // gridDim and blockDim as the kernel saw them
__device__ __forceinline__ void trace_store(long long i) {
    const unsigned long long block =
        ((unsigned long long)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const unsigned thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    trace_writer[i] = block * 1024ull + thread + 1ull;   // 0 means "never written"
    trace_dims[0] = gridDim.x;  trace_dims[1] = gridDim.y;  trace_dims[2] = gridDim.z;
    trace_dims[3] = blockDim.x; trace_dims[4] = blockDim.y; trace_dims[5] = blockDim.z;
}
#else
__device__ __forceinline__ void trace_store(long long) {}
#endif

__device__ __forceinline__ void store(float* out, long long i, float v) {
    out[i] = v;
    trace_store(i);
}

// Four neighbouring outputs out[i .. i+3] with one 16-byte store: out + i must be 16-byte
// aligned (out is, as every CuPy allocation; i a multiple of 4). streaming = 1 marks the store
// "read once, evict first" (__stcs), for outputs too large to keep in L2.
__device__ __forceinline__ void store4(float* out, long long i, float4 v, int streaming = 0) {
    float4* p = reinterpret_cast<float4*>(out + i);
    if (streaming) __stcs(p, v);
    else *p = v;
    for (int e = 0; e < 4; ++e) trace_store(i + e);
}
