// Pooling (PyTorch's F.max_pool2d and F.avg_pool2d, forward and backward). A window of output
// (oh, ow) starts at input cell (oh * stride_h - pad_h, ow * stride_w - pad_w) and has KH x KW taps,
// dil_h / dil_w cells apart (input_coord, index_math.cuh). Padding never wins a max (it is -inf)
// and adds zeros to an average. gpuops/pool.py holds the NumPy twin of every formula here.
//
//   v1 max_pool2d                     one thread per output cell: the window's max and the flat input
//                                     index of its first maximum (NaN wins and propagates)
//   v1 max_pool2d_backward_scatter    one thread per OUTPUT adds its gradient onto its winner with
//                                     atomicAdd (PyTorch's CPU order)
//   v2 max_pool2d_backward_gather     v1 turned around: one thread per INPUT cell sums the gradients
//                                     of the outputs it won: no atomics, deterministic (PyTorch's
//                                     CUDA NCHW kernel)
//   v1 avg_pool2d                     one thread per output cell: the window's sum over a divisor
//   v1 avg_pool2d_backward_gather     one thread per input cell sums grad / divisor of its windows
#include "index_math.cuh"

// The first tap of a window starting at `start` (maybe negative, in the padding) that lies at
// or after input cell 0: start moved on by whole dilations. NumPy twin: gpuops.pool.first_inside.
__device__ __forceinline__ int first_inside(int start, int dilation) {
    return start >= 0 ? start : start + ((-start + dilation - 1) / dilation) * dilation;
}

// What an average divides its window's sum by (PyTorch's rule): divisor_override when non-zero;
// else the window's cells up to the end of the padding (a ceil_mode window may run past it), or
// with count_include_pad = 0 its cells inside the input only. NumPy twin: gpuops.pool.AvgRule.
__device__ __forceinline__ float avg_divisor(int h0, int w0, int H, int W, int KH, int KW, int pad_h,
                                             int pad_w, int count_include_pad, int divisor_override) {
    if (divisor_override != 0) return (float)divisor_override;
    const int h1 = min(h0 + KH, H + pad_h), w1 = min(w0 + KW, W + pad_w);
    if (count_include_pad) return (float)((h1 - h0) * (w1 - w0));
    return (float)((min(h1, H) - max(h0, 0)) * (min(w1, W) - max(w0, 0)));
}

// =======================================================================================
// v1 max_pool2d: one thread per output cell, one thread ROW per output row (row kernel).
// The thread scans its window row by row, tap by tap, over the taps that fall inside the
// input (padding is -inf and can never win, so it is skipped, not read). A tap wins when it
// is GREATER than the best so far, or NaN: on ties the first maximum in scan order keeps its
// place, and a NaN anywhere makes the output NaN (its index is the last NaN scanned). This is
// PyTorch's comparison, so values AND indices agree with F.max_pool2d(return_indices=True).
// The index starts at the first tap inside the input: a window of -inf reports that cell.
// indices may be NULL (the forward alone, no index wanted).
// =======================================================================================
extern "C" __global__ void max_pool2d_v1(
    const float* __restrict__ x,      // (planes, H, W)
    float* __restrict__ y,            // (planes, H_out, W_out)
    long long* __restrict__ indices,  // (planes, H_out, W_out) flat ih * W + iw in its plane, or NULL
    unsigned rows,                    // planes * H_out
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H_out + oh
        const int oh = (int)(row % (unsigned)H_out);
        const float* __restrict__ src = x + (long long)(row / (unsigned)H_out) * H * W;
        const int h0 = input_coord(oh, stride_h, pad_h, 0, dil_h);
        const int h_first = first_inside(h0, dil_h);
        const int h_end = min(input_coord(oh, stride_h, pad_h, KH - 1, dil_h) + 1, H);
        for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x) {
            const int w0 = input_coord(ow, stride_w, pad_w, 0, dil_w);
            const int w_first = first_inside(w0, dil_w);
            const int w_end = min(input_coord(ow, stride_w, pad_w, KW - 1, dil_w) + 1, W);
            float best = __int_as_float(0xff800000);  // -infinity (NVRTC has no math.h)
            int winner = h_first * W + w_first;
            for (int ih = h_first; ih < h_end; ih += dil_h)
                for (int iw = w_first; iw < w_end; iw += dil_w) {
                    const float v = src[ih * W + iw];
                    if (v > best || isnan(v)) {
                        best = v;
                        winner = ih * W + iw;
                    }
                }
            const long long out = (long long)row * W_out + ow;
            store(y, out, best);
            if (indices) indices[out] = winner;
        }
    }
}

// =======================================================================================
// v1 max_pool2d_backward_scatter: the gradient as the forward sees it, one thread per OUTPUT cell.
// Each output adds its gradient onto the one input cell that won it: one read of its index,
// one atomicAdd, no search over windows (PyTorch's CPU order). Overlapping windows (stride <
// kernel) may share a winner, so additions collide: atomics make them correct, but their order
// (and the float rounding of the sum) varies from run to run. dx must be zeroed first.
// =======================================================================================
extern "C" __global__ void max_pool2d_backward_v1_scatter(
    const float* __restrict__ dy,           // (planes, H_out, W_out)
    const long long* __restrict__ indices,  // (planes, H_out, W_out)
    float* __restrict__ dx,                 // (planes, H, W), zeroed
    unsigned rows,                          // planes * H_out
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H_out + oh
        float* __restrict__ plane = dx + (long long)(row / (unsigned)H_out) * H * W;
        for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x) {
            const long long o = (long long)row * W_out + ow;
            atomicAdd(plane + indices[o], dy[o]);
        }
    }
}

// =======================================================================================
// v2 max_pool2d_backward_gather: v1 turned around, one thread per INPUT cell, one thread row
// per input row (PyTorch's CUDA NCHW kernel). The gradient of a max goes to its winner only,
// so input cell (ih, iw) receives the sum of dy over the windows that cover it AND whose index
// names it. for_each_window inverts the
// window formula tap by tap (index_math.cuh); each covering output's index is compared with
// this cell's flat index. No two threads write the same cell: no atomics, no zeroing, the same
// sum in the same order on every run; the price: up to ceil(KH/s) x ceil(KW/s) index reads per
// input cell, where v1 reads one per output.
// =======================================================================================
extern "C" __global__ void max_pool2d_backward_v2_gather(
    const float* __restrict__ dy,           // (planes, H_out, W_out)
    const long long* __restrict__ indices,  // (planes, H_out, W_out) from max_pool2d_v1
    float* __restrict__ dx,                 // (planes, H, W)
    unsigned rows,                          // planes * H
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H + ih
        const int ih = (int)(row % (unsigned)H);
        const long long plane_out = (long long)(row / (unsigned)H) * H_out * W_out;
        for (int iw = threadIdx.x; iw < W; iw += blockDim.x) {
            const long long me = (long long)ih * W + iw;
            float sum = 0.0f;
            for_each_window(ih, iw, KH, KW, H_out, W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                            [&](int, int, int oh, int ow) {
                                const long long o = plane_out + (long long)oh * W_out + ow;
                                if (indices[o] == me) sum += dy[o];
                            });
            store(dx, (long long)row * W + iw, sum);
        }
    }
}

// =======================================================================================
// v1 avg_pool2d: one thread per output cell, one thread row per output row.
// The thread sums the taps of its window that fall inside the input (padding adds zero, so it
// is skipped) row by row, then divides by avg_divisor. No dilation (PyTorch's avg_pool2d has none).
// =======================================================================================
extern "C" __global__ void avg_pool2d_v1(
    const float* __restrict__ x,  // (planes, H, W)
    float* __restrict__ y,        // (planes, H_out, W_out)
    unsigned rows,                // planes * H_out
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int count_include_pad, int divisor_override)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H_out + oh
        const int oh = (int)(row % (unsigned)H_out);
        const float* __restrict__ src = x + (long long)(row / (unsigned)H_out) * H * W;
        const int h0 = input_coord(oh, stride_h, pad_h, 0, 1);
        for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x) {
            const int w0 = input_coord(ow, stride_w, pad_w, 0, 1);
            float sum = 0.0f;
            for (int ih = max(h0, 0); ih < min(h0 + KH, H); ++ih)
                for (int iw = max(w0, 0); iw < min(w0 + KW, W); ++iw) sum += src[ih * W + iw];
            const float divisor = avg_divisor(h0, w0, H, W, KH, KW, pad_h, pad_w, count_include_pad,
                                              divisor_override);
            store(y, (long long)row * W_out + ow, sum / divisor);
        }
    }
}

// =======================================================================================
// v1 avg_pool2d_backward_gather: one thread per INPUT cell, one thread row per input row.
// Every window that covers the cell passed it grad / divisor (the forward's divisor of that
// window); for_each_window finds those windows (dilation 1) and the thread sums their shares.
// Deterministic, no atomics.
// =======================================================================================
extern "C" __global__ void avg_pool2d_backward_v1_gather(
    const float* __restrict__ dy,  // (planes, H_out, W_out)
    float* __restrict__ dx,        // (planes, H, W)
    unsigned rows,                 // planes * H
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int count_include_pad, int divisor_override)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H + ih
        const int ih = (int)(row % (unsigned)H);
        const long long plane_out = (long long)(row / (unsigned)H) * H_out * W_out;
        for (int iw = threadIdx.x; iw < W; iw += blockDim.x) {
            float sum = 0.0f;
            for_each_window(ih, iw, KH, KW, H_out, W_out, stride_h, stride_w, pad_h, pad_w, 1, 1,
                            [&](int, int, int oh, int ow) {
                                const int h0 = input_coord(oh, stride_h, pad_h, 0, 1);
                                const int w0 = input_coord(ow, stride_w, pad_w, 0, 1);
                                sum += dy[plane_out + (long long)oh * W_out + ow] /
                                       avg_divisor(h0, w0, H, W, KH, KW, pad_h, pad_w,
                                                   count_include_pad, divisor_override);
                            });
            store(dx, (long long)row * W + iw, sum);
        }
    }
}
