// unfold (im2col) and fold (col2im) with PyTorch semantics: stride, zero padding, dilation.
//
//   v1 unfold          one thread ROW per row of cols; 16-byte stores where rows allow
//   v1 fold_scatter    the same walk, adding each entry onto its pixel with atomicAdd
//   v2 fold_gather     v1 turned around: one thread per PIXEL sums the entries that cover it
//
// cols has shape (N, C*KH*KW, L) with L = H_out * W_out. Its flat index decomposes into the
// 6-D index (n, c, ki, kj, oh, ow):
//   idx = ((((n*C + c)*KH + ki)*KW + kj)*H_out + oh)*W_out + ow
// and that element holds input cell
//   ih = input_coord(oh, stride_h, pad_h, ki, dil_h),  iw = input_coord(ow, stride_w, pad_w, kj, dil_w)
// (zero when (ih, iw) falls in the padding).
//
// Work split: one thread ROW per row of W_out (or W) consecutive elements. The row index is
// split into (n*C + c, ki, kj, oh) once per row, with 32-bit arithmetic (a 64-bit division
// costs several times more; the host checks rows < 2^31), so the inner loop is one
// multiply-add and a bounds check per element, and neighbouring threads touch neighbouring
// addresses (coalesced). A block is (bx, by) threads: by rows, bx threads per row (bx may be
// smaller than a warp when rows are short: one warp then spans rows). A capped grid of blocks
// walks all rows (grid-stride loop): one block per row would cost more than the work when
// rows are many and short.
#include "index_math.cuh"

// Split a row of cols, row = ((n*C + c)*KH + ki)*KW + kj)*H_out + oh, into its parts;
// returns n*C + c. Once per row, in 32-bit arithmetic.
__device__ __forceinline__ long long split_row(unsigned row, int H_out, int KW, int KH,
                                               int& oh, int& kj, int& ki) {
    oh = (int)(row % H_out); row /= H_out;
    kj = (int)(row % KW);    row /= KW;
    ki = (int)(row % KH);    row /= KH;
    return row;
}

// =======================================================================================
// v1 unfold: row = ((n*C + c)*KH + ki)*KW + kj)*H_out + oh, a row of W_out outputs that all
// read input row ih = input_coord(oh, ..ki..).
// When W_out is a multiple of 4, each thread writes 4 neighbours with one 16-byte store
// (rows then start 16-byte aligned), and only the 4-groups that touch the padding pay for
// bounds checks: far fewer instructions per element than one thread per element.
// streaming = 1 marks those stores "read once, evict first" (__stcs). cols is K*K times
// larger than x and x's plane is re-read once per tap (ki, kj); when a plane is large
// (2048 x 2048: 16 MB) ordinary stores push it out of L2 between two taps, and every re-read
// goes to DRAM. The host sets it only for planes that large (small planes stay cached anyway).
// =======================================================================================
extern "C" __global__ void unfold_v1(
    const float* __restrict__ x,   // (N, C, H, W)
    float* __restrict__ cols,      // (N, C*KH*KW, H_out*W_out)
    unsigned rows,                 // N*C*KH*KW*H_out
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int streaming)
{
    FOR_EACH_ROW(row, rows) {
        int oh, kj, ki;
        const long long nc = split_row(row, H_out, KW, KH, oh, kj, ki);   // n*C + c
        const int ih = input_coord(oh, stride_h, pad_h, ki, dil_h);       // the input row it reads
        const long long out0 = (long long)row * W_out;                    // cols index of ow = 0
        const bool vec4 = (W_out & 3) == 0;
        if (ih < 0 || ih >= H) {                                 // the whole row is padding
            if (vec4) {
                for (int q = threadIdx.x; q < (W_out >> 2); q += blockDim.x)
                    store4(cols, out0 + (q << 2), make_float4(0.f, 0.f, 0.f, 0.f), streaming);
            } else {
                for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x) store(cols, out0 + ow, 0.0f);
            }
            continue;
        }
        const float* __restrict__ src = x + (nc * H + ih) * W;
        const int iw0 = input_coord(0, stride_w, pad_w, kj, dil_w);      // iw of ow = 0
        // outputs ow in [ow_lo, ow_hi) read inside the image (iw0 + ow*stride_w in [0, W))
        const int ow_lo = iw0 < 0 ? (-iw0 + stride_w - 1) / stride_w : 0;
        const int ow_hi = W - 1 - iw0 < 0 ? 0 : min(W_out, (W - 1 - iw0) / stride_w + 1);
        if (vec4) {
            for (int q = threadIdx.x; q < (W_out >> 2); q += blockDim.x) {
                const int ow = q << 2;
                const float* p = src + iw0 + ow * stride_w;
                float4 v;
                if (ow >= ow_lo && ow + 3 < ow_hi) {             // all four inside the image
                    v = make_float4(p[0], p[stride_w], p[2 * stride_w], p[3 * stride_w]);
                } else {
                    v.x = (ow     >= ow_lo && ow     < ow_hi) ? p[0] : 0.0f;
                    v.y = (ow + 1 >= ow_lo && ow + 1 < ow_hi) ? p[stride_w] : 0.0f;
                    v.z = (ow + 2 >= ow_lo && ow + 2 < ow_hi) ? p[2 * stride_w] : 0.0f;
                    v.w = (ow + 3 >= ow_lo && ow + 3 < ow_hi) ? p[3 * stride_w] : 0.0f;
                }
                store4(cols, out0 + ow, v, streaming);
            }
        } else {
            for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x)
                store(cols, out0 + ow, (ow >= ow_lo && ow < ow_hi) ? src[iw0 + ow * stride_w] : 0.0f);
        }
    }
}

// =======================================================================================
// v1 fold_scatter: the walk of unfold run backwards, each cols entry ADDED onto the pixel it
// came from. Overlapping patches hit the same pixel, hence atomicAdd (and a summation order
// that can change from run to run). y must be zeroed before the launch.
// =======================================================================================
extern "C" __global__ void fold_v1_scatter(
    const float* __restrict__ cols,  // (N, C*KH*KW, H_out*W_out)
    float* __restrict__ y,           // (N, C, H, W), zeroed
    unsigned rows,                   // N*C*KH*KW*H_out
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w)
{
    FOR_EACH_ROW(row, rows) {
        int oh, kj, ki;
        const long long nc = split_row(row, H_out, KW, KH, oh, kj, ki);
        const int ih = input_coord(oh, stride_h, pad_h, ki, dil_h);
        if (ih < 0 || ih >= H) continue;                           // this row fed only padding
        const float* __restrict__ src = cols + (long long)row * W_out;
        float* dst = y + (nc * H + ih) * W;
        for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x) {
            const int iw = input_coord(ow, stride_w, pad_w, kj, dil_w);
            if (iw >= 0 && iw < W) atomicAdd(&dst[iw], src[ow]);
        }
    }
}

// =======================================================================================
// v2 fold_gather = v1 turned around: one thread per OUTPUT pixel sums every cols entry that
// covers it: for_each_window (index_math.cuh) inverts ih = input_coord(oh, .., ki, ..) per tap,
// oh = output_coord(ih, stride_h, pad_h, ki, dil_h, H_out) (-1: no window puts tap ki there),
// and likewise ow. No atomics and a fixed order: the result is deterministic.
// Here a row is a row of the OUTPUT: row = (n*C + c)*H + ih.
// =======================================================================================
extern "C" __global__ void fold_v2_gather(
    const float* __restrict__ cols,  // (N, C*KH*KW, H_out*W_out)
    float* __restrict__ y,           // (N, C, H, W)
    unsigned rows,                   // N*C*H
    int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w)
{
    FOR_EACH_ROW(row, rows) {
        const int ih = (int)(row % H);
        const long long nc = row / H;
        const long long L = (long long)H_out * W_out;
        const long long out0 = (long long)row * W;                // y index of (row, iw = 0)
        for (int iw = threadIdx.x; iw < W; iw += blockDim.x) {
            float sum = 0.0f;   // the cols entry of tap (ki, kj) at window (oh, ow): row (n, c, ki, kj)
            for_each_window(ih, iw, KH, KW, H_out, W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                            [&](int ki, int kj, int oh, int ow) {
                                sum += cols[((nc * KH + ki) * KW + kj) * L + (long long)oh * W_out + ow];
                            });
            store(y, out0 + iw, sum);
        }
    }
}
