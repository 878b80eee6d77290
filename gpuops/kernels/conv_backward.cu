// The backward pass of a convolution layer (PyTorch semantics: stride, zero padding, dilation,
// groups), and the transposed convolution, which is the same computation as grad_input.
// Two operations, each numbered on its own: grad_input_vN are successive versions of grad_input,
// grad_weight_vN of grad_weight. Each version states what it changes from the one before; the
// app shows the version that ran.
//
//   grad_input_v1_scatter   one thread per OUTPUT GRADIENT adds dy * w onto every input cell its
//                           output read (atomicAdd): "stamp the filter, scaled by dy"
//   grad_input_v2_gather    v1 turned around: one thread per INPUT cell sums the output gradients
//                           that read it, through the flipped filter (PMPP fig. 16.9-16.10); no atomics
//   grad_weight_v1_reduce   one BLOCK per weight (m, c, ki, kj) sums dy * x over the batch and every
//                           output pixel, then a shared-memory tree reduction (PMPP fig. 16.11)
//   grad_weight_v2_3xtf32   (conv_backward_hopper.cu, Hopper only) dW as one implicit GEMM on the
//                           tensor cores, x read through KW shifted copies
//   grad_weight_v3_pairs    v1 regrouped: one block per (filter, channel) PAIR and slice of the output
//                           rows, one warp per tap walking 4 rows at once, so the KH*KW weights of
//                           a pair share one pass over its dy and x; the host adds the slices' sums
//   grad_weight_v4_pairs_shared  v3 with each chunk of rows staged in shared memory once for all taps,
//                           a team of threads per tap reading it there
//   grad_weight_v5_columns  v3's grid with a thread per column of outputs, up to 9 taps' sums in its
//                           registers, the block's sums added tap by tap at the end
// and two copies the host's compositions launch (at the end of the file): flip_filter (the
// filter of flipped_conv) and add_slices (v3-v5's slices summed into dw).
//
// Shapes: dy (N, M, H_out, W_out) the gradient of the forward output, w (M, C/groups, KH, KW),
// x and dx (N, C, H, W), dw like w. The forward pass computed, for filter m of group
// g = m / (M/groups), channel c of the group and tap (ki, kj),
//   y[n, m, oh, ow] += x[n, g*C/groups + c, ih, iw] * w[m, c, ki, kj]
//   with ih = input_coord(oh, stride_h, pad_h, ki, dil_h),  iw = input_coord(ow, stride_w, pad_w, kj, dil_w)
// (index_math.cuh), so by the chain rule every such term sends
//   dy[n, m, oh, ow] * w[m, c, ki, kj]   to  dx[n, g*C/groups + c, ih, iw]   (when (ih, iw) is no padding)
//   dy[n, m, oh, ow] * x[n, g*C/groups + c, ih, iw]   to  dw[m, c, ki, kj]
// conv_transpose2d(x, w) is the first line with x in the role of dy: the host passes the
// transposed convolution's input as dy and its output as dx (H_out, W_out are then the input's
// size: with output_padding >= stride they can be smaller than window_count; output_coord's
// count keeps the extra windows out).
// Reflect padding is the host's job: it pads x first, runs these kernels with no padding on
// the padded input, and folds the mirrored cells back (reflect_pad.cu, reflect_pad_backward_v1 / v2).
//
// Every kernel takes the geometry arguments of conv2d.cu, in the same order, without `reflect`:
//   N, C, H, W, M, KH, KW, H_out, W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups
// Offsets into dy, x, dx are 64-bit.
#include "index_math.cuh"

// grad_weight v3, v4 and v5 share their grid: blockIdx.x is a (filter, channel) pair, blockIdx.y a
// slice of the batch's output rows r = n*H_out + oh; each block ends with one partial sum per
// tap of its pair, and the host adds the slices' sums.
struct PairSlice {
    int m, x_channel;       // this block's pair: filter m of group g and channel c of that group,
                            // which is x's channel g*C/groups + c
    int r0, r1;             // this block's slice: output rows r0 .. r1 - 1
    long long first;        // where its sums start: partial[slice, m, c, 0, 0]
};

__device__ PairSlice pair_slice(int N, int C, int M, int KK, int H_out, int groups, int rows_per_slice)
{
    const int Cg = C / groups, Mg = M / groups;
    const int c = (int)(blockIdx.x % Cg);
    PairSlice p;
    p.m = (int)(blockIdx.x / Cg);
    p.x_channel = p.m / Mg * Cg + c;
    p.r0 = blockIdx.y * rows_per_slice;
    p.r1 = min(N * H_out, p.r0 + rows_per_slice);         // N * H_out < 2^31, checked by the host
    p.first = ((long long)blockIdx.y * M * Cg + blockIdx.x) * KK;
    return p;
}

// =======================================================================================
// grad_input v1, scatter: ONE THREAD PER OUTPUT GRADIENT dy[n, m, oh, ow] (the forward direct
// kernel's layout, read backwards).
// The thread reads its dy value once, walks the taps (ki, kj) of its window and, for every
// channel c of its group, ADDS dy * w[m, c, ki, kj] onto the input cell that tap read. Windows
// of neighbouring outputs overlap, and all M/groups filters of a group write to the same
// cells, so several threads add to one cell at the same time: atomicAdd. dx must be zeroed
// before the launch, and the order of the additions (so the last bits of the result) can
// change from run to run.
// grid  = (ceil(H_out*W_out / blockDim.x), M, N), block = (pixels, 1, 1): threadIdx.x walks
// consecutive output pixels of one filter, so a warp adds onto neighbouring input cells.
// =======================================================================================
extern "C" __global__ void grad_input_v1_scatter(
    const float* __restrict__ dy,  // (N, M, H_out, W_out)
    const float* __restrict__ w,   // (M, C/groups, KH, KW)
    float* __restrict__ dx,        // (N, C, H, W), zeroed
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups)
{
    const long long L = (long long)H_out * W_out;          // output pixels per sample
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y, n = blockIdx.z;
    if (p >= L) return;                                    // the last block overhangs
    const int oh = (int)(p / W_out), ow = (int)(p % W_out);

    const int Cg = C / groups, g = m / (M / groups);
    const long long plane = (long long)H * W;
    const float grad = dy[((long long)n * M + m) * L + p];
    float* dx_n = dx + ((long long)n * C + (long long)g * Cg) * plane;    // channel 0 of group g
    const float* __restrict__ w_m = w + (long long)m * Cg * KH * KW;

    for (int ki = 0; ki < KH; ++ki) {
        const int ih = input_coord(oh, stride_h, pad_h, ki, dil_h);
        if (ih < 0 || ih >= H) continue;                   // this tap read zero padding
        for (int kj = 0; kj < KW; ++kj) {
            const int iw = input_coord(ow, stride_w, pad_w, kj, dil_w);
            if (iw < 0 || iw >= W) continue;
            float* dst = dx_n + (long long)ih * W + iw;    // tap (ki, kj) of channel 0 ...
            const float* __restrict__ wp = w_m + ki * KW + kj;
            for (int c = 0; c < Cg; ++c, dst += plane, wp += KH * KW)     // ... then channel by channel
                atomicAdd(dst, grad * *wp);
        }
    }
}

// =======================================================================================
// grad_input v2, gather = v1 TURNED AROUND: one thread per INPUT cell dx[n, c, ih, iw] sums every
// output gradient whose window covered it (PMPP's dE/dX). For tap ki the covering output row is
//   oh = output_coord(ih, stride_h, pad_h, ki, dil_h, H_out)   (-1: no window puts tap ki on ih)
// and likewise ow; the cell then takes dy[n, m, oh, ow] * w[m, c, ki, kj] from every filter m
// of its group. With stride 1, oh = ih + pad_h - ki*dil_h: as ki grows the thread walks dy
// BACKWARDS, which is why grad_input is "a convolution of dy with the flipped filter".
// Each cell has exactly one writer and sums in a fixed order: no atomics, no zeroing, and the
// same bits on every run.
// Work split: a row kernel (as fold_v2_gather): one thread ROW per row of dx,
// row = (n*C + c)*H + ih, the threads of a row walk iw; a capped grid loops over rows.
// =======================================================================================
extern "C" __global__ void grad_input_v2_gather(
    const float* __restrict__ dy,  // (N, M, H_out, W_out)
    const float* __restrict__ w,   // (M, C/groups, KH, KW)
    float* __restrict__ dx,        // (N, C, H, W)
    unsigned rows,                 // N*C*H (< 2^31, checked by the host)
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups)
{
    const int Cg = C / groups, Mg = M / groups, KK = KH * KW;
    const long long L = (long long)H_out * W_out;
    FOR_EACH_ROW(row, rows) {
        const int ih = (int)(row % H);
        const unsigned nc = row / H;                       // n*C + c
        const int c = (int)(nc % C), n = (int)(nc / C);
        const int g = c / Cg, cg = c - g * Cg;             // group, channel within it
        const float* __restrict__ dy_g = dy + ((long long)n * M + (long long)g * Mg) * L;  // filter g*Mg
        const float* __restrict__ w_c = w + ((long long)g * Mg * Cg + cg) * KK;           // w[g*Mg, cg]
        const long long out0 = (long long)row * W;         // dx index of (row, iw = 0)
        for (int iw = threadIdx.x; iw < W; iw += blockDim.x) {
            float sum = 0.0f;
            for_each_window(ih, iw, KH, KW, H_out, W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
                            [&](int ki, int kj, int oh, int ow) {
                                const float* __restrict__ d = dy_g + (long long)oh * W_out + ow;
                                const float* __restrict__ wp = w_c + ki * KW + kj;
                                for (int m = 0; m < Mg; ++m, d += L, wp += Cg * KK)   // the group's filters
                                    sum += *d * *wp;
                            });
            store(dx, out0 + iw, sum);
        }
    }
}

// =======================================================================================
// grad_weight v1, reduce: ONE BLOCK PER WEIGHT w[m, c, ki, kj] (PMPP's dE/dW).
// A weight touched every output pixel of its filter, so its gradient is a sum over the whole
// batch and every (oh, ow):  dw[m, c, ki, kj] = sum dy[n, m, oh, ow] * x[n, g*Cg + c, ih, iw].
// One block of 256 threads takes that sum apart: blockDim.y = 8 thread rows take rows
// r = n*H_out + oh (r, r + 8, ...), the 32 threads of a thread row walk ow, so a warp reads
// neighbouring dy cells and input cells stride_w apart. Each thread keeps its share in a
// register, then the block adds the 256 shares in a shared-memory tree: 128 threads add
// pairs, then 64, ... then thread 0 stores the root. A fixed split and a fixed tree: no
// atomics, the same bits on every run.
// grid = (M * C/groups * KH * KW, 1, 1): blockIdx.x = ((m*Cg + c)*KH + ki)*KW + kj, which is
// also the weight's index in dw.
// =======================================================================================
#define REDUCE_X 32                                // threads along ow
#define REDUCE_Y 8                                 // thread rows
#define REDUCE_THREADS (REDUCE_X * REDUCE_Y)       // 256, a power of two for the tree

extern "C" __global__ void __launch_bounds__(REDUCE_THREADS) grad_weight_v1_reduce(
    const float* __restrict__ dy,  // (N, M, H_out, W_out)
    const float* __restrict__ x,   // (N, C, H, W), the forward input
    float* __restrict__ dw,        // (M, C/groups, KH, KW)
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups)
{
    __shared__ float partial[REDUCE_THREADS];
    const int Cg = C / groups, Mg = M / groups;
    // this block's weight: blockIdx.x = ((m*Cg + c)*KH + ki)*KW + kj
    unsigned rest = blockIdx.x;
    const int kj = (int)(rest % KW); rest /= KW;
    const int ki = (int)(rest % KH); rest /= KH;
    const int c = (int)(rest % Cg);
    const int m = (int)(rest / Cg);
    const int g = m / Mg;
    const long long L = (long long)H_out * W_out;
    const long long plane = (long long)H * W;
    const int t = threadIdx.y * blockDim.x + threadIdx.x;

    float sum = 0.0f;
    const int out_rows = N * H_out;                        // < 2^31, checked by the host
    for (int r = threadIdx.y; r < out_rows; r += blockDim.y) {
        const int n = r / H_out, oh = r - n * H_out;
        const int ih = input_coord(oh, stride_h, pad_h, ki, dil_h);
        if (ih < 0 || ih >= H) continue;                   // the whole row read zero padding
        const float* __restrict__ dy_row = dy + ((long long)n * M + m) * L + (long long)oh * W_out;
        const float* __restrict__ x_row = x + ((long long)n * C + (long long)g * Cg + c) * plane + (long long)ih * W;
        for (int ow = threadIdx.x; ow < W_out; ow += blockDim.x) {
            const int iw = input_coord(ow, stride_w, pad_w, kj, dil_w);
            if (iw >= 0 && iw < W) sum += dy_row[ow] * x_row[iw];
        }
    }
    // the tree: after the step with stride s, partial[t] (t < s) holds the sum of 256/s shares
    partial[t] = sum;
    __syncthreads();
    for (int s = REDUCE_THREADS / 2; s > 0; s >>= 1) {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t == 0) store(dw, (long long)blockIdx.x, partial[0]);
}

// =======================================================================================
// grad_weight v3, pairs = v1 REGROUPED: ONE BLOCK PER (FILTER, CHANNEL) PAIR AND SLICE OF THE
// OUTPUT ROWS, ONE WARP PER TAP, FOUR ROWS AT ONCE.
// In v1 each of the KH*KW weights of a pair (m, c) has its own block, and every one of those
// blocks reads all of dy[., m] and x[., g*Cg + c]: the pair's data crosses from memory KH*KW
// times. In v3 one block holds all KH*KW weights of its pair: warp t sums tap
// (ki, kj) = (t / KW, t % KW), and the warps walk the same output rows at the same time, so a
// row of dy comes from memory once and from L1 for the other warps, and the taps' x rows overlap.
// This is what depthwise layers need: one channel a filter, so few pairs and long sums (v1 read
// their 200 MB nine times). A dense layer has M*C/groups pairs, each reading whole planes: the
// GEMM algorithms are the ones for it.
// The batch's output rows r = n*H_out + oh are cut into gridDim.y slices of rows_per_slice rows
// (enough blocks to fill the GPU when pairs are few). A warp takes its slice's rows V3_ROWS at a
// time: its 32 lanes walk ow along all V3_ROWS rows together, so each lane has V3_ROWS pairs of
// loads in flight instead of one. Then the lanes add their 32 shares with shuffles (lane i takes
// lane i + 16's, then i + 8's, ...); lane 0 stores the slice's sum in
//   partial[slice, m, c, ki, kj]
// and the host adds the slices (gpuops.conv_backward.weight_pairs). Fixed splits and fixed
// orders: the same bits on every run. More than 16 taps (5x5, 7x7): warp w takes taps w, w + 16, ...
// grid = (M * C/groups pairs, slices, 1): blockIdx.x = m*Cg + c; block = (32, min(KH*KW, 16), 1).
// Measured (H100, depthwise 3x3, 32 x 256 x 56 x 56, ms, the kernel and the slices' sum, twice):
// V3_ROWS 1 / 2 / 4 / 8 / 16 with 5 slices: 1.21 / 0.82 / 0.71 / 0.90 / 1.18; with 17 slices (about
// 32 blocks an SM) 1.05 / 0.74 / 0.65 / 0.80 / 1.18. v1 took 0.75, PyTorch 0.35: the loads still
// wait on memory (the nine warps of a block ask for the same dy row), and the next version should
// stage the rows in shared memory once for all taps.
// =======================================================================================
#ifndef V3_ROWS
#define V3_ROWS 4                                  // output rows a warp walks at once
#endif

extern "C" __global__ void __launch_bounds__(512) grad_weight_v3_pairs(
    const float* __restrict__ dy,  // (N, M, H_out, W_out)
    const float* __restrict__ x,   // (N, C, H, W), the forward input
    float* __restrict__ partial,   // (slices, M, C/groups, KH, KW): one sum per slice
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups,
    int rows_per_slice)            // output rows (n, oh) a slice sums over
{
    const int KK = KH * KW;
    const PairSlice p = pair_slice(N, C, M, KK, H_out, groups, rows_per_slice);
    const int m = p.m, xc = p.x_channel, r0 = p.r0, r1 = p.r1;
    const long long L = (long long)H_out * W_out, plane = (long long)H * W;

    for (int t = threadIdx.y; t < KK; t += blockDim.y) {   // this warp's tap(s)
        const int ki = t / KW, kj = t - ki * KW;
        float sum = 0.0f;
        for (int rb = r0; rb < r1; rb += V3_ROWS) {
            // the V3_ROWS rows' dy and x rows (nullptr: past the slice, or the row read padding)
            const float* dy_row[V3_ROWS];
            const float* x_row[V3_ROWS];
#pragma unroll
            for (int u = 0; u < V3_ROWS; ++u) {
                const int r = rb + u;
                const int n = r / H_out, oh = r - n * H_out;
                const int ih = input_coord(oh, stride_h, pad_h, ki, dil_h);
                const bool used = r < r1 && ih >= 0 && ih < H;
                dy_row[u] = used ? dy + ((long long)n * M + m) * L + (long long)oh * W_out : nullptr;
                x_row[u] = used ? x + ((long long)n * C + xc) * plane + (long long)ih * W : nullptr;
            }
            for (int ow = threadIdx.x; ow < W_out; ow += 32) {
                const int iw = input_coord(ow, stride_w, pad_w, kj, dil_w);
                if (iw < 0 || iw >= W) continue;           // this column read zero padding
#pragma unroll
                for (int u = 0; u < V3_ROWS; ++u)          // independent loads: all in flight together
                    if (dy_row[u]) sum += __ldg(dy_row[u] + ow) * __ldg(x_row[u] + iw);
            }
        }
        for (int offset = 16; offset > 0; offset >>= 1)    // lane 0 ends with the warp's sum
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        if (threadIdx.x == 0) store(partial, p.first + t, sum);
    }
}

// =======================================================================================
// grad_weight v4, pairs_shared = v3 with the rows STAGED IN SHARED MEMORY ONCE FOR ALL TAPS.
// v3's warps each read their tap's x and the same dy rows from global memory, and wait on those
// loads (0.65 ms on a depthwise layer where PyTorch takes 0.35). In v4 the block first copies a
// chunk of its slice's output rows (chunk_rows rows of dy[n, m], never past sample n) and the x
// rows they read (in_rows = (chunk_rows - 1)*S_h + (KH-1)*D_h + 1 rows of channel g*Cg + c,
// zeros above and below x) into shared memory: both are contiguous runs in global memory, so
// all 256 threads copy them with neighbouring loads. Then every tap reads the chunk from shared
// memory: the block's threads form one TEAM per tap (team = 256 / taps threads; 28 for 3x3, the
// last 4 threads idle), and a team's threads walk the chunk's pixels p = oh*W_out + ow, team
// apart, adding dy[oh, ow] * x[oh*S_h + ki*D_h, ow*S_w + kj*D_w - P_w] (a column in the padding
// adds nothing). After the slice, the first thread of each team adds its team's shares in order
// and stores partial[slice, m, c, ki, kj], as v3; the host adds the slices. More than 256 taps:
// passes of 256 taps, each restaging the rows. Deterministic (fixed splits and orders).
// grid = (M * C/groups pairs, slices, 1); block = 256 threads; dynamic shared memory:
// (in_rows * W + chunk_rows * W_out) floats.
// Measured (H100, the depthwise layer above, ms, kernel and slices' sum, 17 slices): chunks of
// 512 / 1024 / 2048 / 4096 pixels 0.48 / 0.41 / 0.38 / 0.37 (v3 0.65, PyTorch 0.35-0.37); the host
// asks for 4096. In the bench runs at d165347 (1024-pixel chunks) auto's dw there ran v4: 0.435 / 0.392.
// =======================================================================================
#define V4_THREADS 256

extern "C" __global__ void __launch_bounds__(V4_THREADS) grad_weight_v4_pairs_shared(
    const float* __restrict__ dy,  // (N, M, H_out, W_out)
    const float* __restrict__ x,   // (N, C, H, W), the forward input
    float* __restrict__ partial,   // (slices, M, C/groups, KH, KW): one sum per slice
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups,
    int rows_per_slice,            // output rows (n, oh) a slice sums over
    int chunk_rows)                // output rows staged at once
{
    extern __shared__ float smem[];
    __shared__ float s_share[V4_THREADS];                  // the threads' sums, for the teams' totals
    const int max_in_rows = (chunk_rows - 1) * stride_h + (KH - 1) * dil_h + 1;
    float* s_x = smem;                                     // [in_rows][W]: x rows ih0, ih0 + 1, ...
    float* s_dy = smem + max_in_rows * W;                  // [rows][W_out]: dy rows oh0, oh0 + 1, ...

    const int KK = KH * KW;
    const PairSlice p = pair_slice(N, C, M, KK, H_out, groups, rows_per_slice);
    const int m = p.m, xc = p.x_channel, r0 = p.r0, r1 = p.r1;
    const long long L = (long long)H_out * W_out, plane = (long long)H * W;
    const int tid = threadIdx.x;

    for (int t0 = 0; t0 < KK; t0 += V4_THREADS) {         // passes of up to 256 taps
        const int taps = min(KK - t0, V4_THREADS);
        const int team = V4_THREADS / taps;                // threads a tap
        const int t = t0 + tid / team, lane = tid % team;  // my tap, my place in its team
        const bool active = tid < taps * team;
        const int ki = t / KW, kj = t - ki * KW;
        const int step_oh = team / W_out, step_ow = team % W_out;  // a step of `team` pixels
        float sum = 0.0f;
        for (int r = r0; r < r1;) {
            const int n = r / H_out, oh0 = r - n * H_out;
            const int rows = min(min(chunk_rows, r1 - r), H_out - oh0);   // never past sample n
            const int in_rows = (rows - 1) * stride_h + (KH - 1) * dil_h + 1;
            // x rows ih0 .. ih0 + in_rows - 1 are one run of x's plane: cell i of the run is plane
            // cell ih0*W + i, zero where that falls above or below the plane
            const long long run0 = (long long)(oh0 * stride_h - pad_h) * W;
            const float* __restrict__ x_c = x + ((long long)n * C + xc) * plane;
            const float* __restrict__ dy_m = dy + ((long long)n * M + m) * L + (long long)oh0 * W_out;
            __syncthreads();                               // the previous chunk is read
            for (int i = tid; i < in_rows * W; i += V4_THREADS) {
                const long long cell = run0 + i;
                s_x[i] = cell >= 0 && cell < plane ? x_c[cell] : 0.0f;
            }
            for (int i = tid; i < rows * W_out; i += V4_THREADS) s_dy[i] = dy_m[i];
            __syncthreads();
            if (active) {
                int oh = lane / W_out, ow = lane % W_out;  // pixel p = lane, then team apart
                for (int p = lane; p < rows * W_out; p += team) {
                    const int iw = input_coord(ow, stride_w, pad_w, kj, dil_w);
                    if (iw >= 0 && iw < W) sum += s_dy[p] * s_x[(oh * stride_h + ki * dil_h) * W + iw];
                    ow += step_ow;
                    oh += step_oh;
                    if (ow >= W_out) { ow -= W_out; ++oh; }
                }
            }
            r += rows;
        }
        __syncthreads();
        s_share[tid] = sum;
        __syncthreads();
        if (active && lane == 0) {                         // the team's shares, in order
            float total = 0.0f;
            for (int j = 0; j < team; ++j) total += s_share[tid + j];
            store(partial, p.first + t, total);
        }
    }
}

// =======================================================================================
// grad_weight v5, columns = v3's grid with a THREAD PER COLUMN OF OUTPUTS and the taps' sums
// IN REGISTERS.
// v4 stages chunks of rows and has teams of threads sum one tap each: every chunk costs
// divisions, 64-bit offsets, copies and two barriers, and on small planes a thread gets a few
// products per chunk. Nsight Compute on a 32 x 512 x 14 x 14 depthwise layer: 85 instructions a
// product, issue slots 81% busy, DRAM 7% (0.091 ms; PyTorch's whole dw 0.061). Here:
//   - the block's threads stand side by side on `cols` = min(W_out, 256) output columns, and
//     runners = 256 / cols of them one below the other: runner u walks its run of the slice's
//     rows (the slice cut into runners runs), down its column ow, then ow + cols, ...;
//   - at each output (n, oh, ow) the thread reads dy once and, for each of up to V5_TAPS taps,
//     the x cell the tap read, and adds their product to that tap's sum IN A REGISTER: the tap
//     offsets (ki*D_h, kj*D_w) are worked out once per pass, the loop over the taps unrolls,
//     so all of a row's loads are in flight together, and neighbouring threads read
//     neighbouring cells (through L1: the taps of one thread overlap the next thread's);
//   - then the block adds its threads' sums tap by tap: the lanes with shuffles, the 8 warps'
//     sums in order by thread t, which stores partial[slice, m, c, tap t]; the host adds the
//     slices, as for v3 and v4. More than V5_TAPS taps: passes. Deterministic.
// grid = (M * C/groups pairs, slices, 1), slices so that there are about COLUMNS_TARGET_BLOCKS
// blocks (gpuops/conv_backward.py); block = 256 threads; no dynamic shared memory.
// Measured (H100, the kernel alone, ms; v4 in the same run): 16 taps a pass / 9 taps a pass, with
// about 1056 / 4224 / 16896 blocks: 32 x 512 x 14 x 14 depthwise 0.117 / 0.159 / 0.328 and
// 0.043 / 0.057 / 0.125 (v4 0.091); 32 x 256 x 56 x 56 1.12 / 1.16 / 1.29 and 0.366 / 0.335 /
// 0.375 (v4 0.327); stride 2, 32 x 128 x 112 x 112 0.631 / 0.674 / 0.910 and 0.179 / 0.191 /
// 0.257 (v4 0.238). 16 registers of sums (and 32 of offsets) for a 3x3 window's 9 taps cost
// occupancy and 7 idle taps a product; so 9 taps a pass (a 5x5 window: 3 passes), 1056 blocks.
// =======================================================================================
#define V5_THREADS 256
#define V5_TAPS 9                                          // taps a pass sums in registers (a 3x3 window's)

extern "C" __global__ void __launch_bounds__(V5_THREADS) grad_weight_v5_columns(
    const float* __restrict__ dy,  // (N, M, H_out, W_out)
    const float* __restrict__ x,   // (N, C, H, W), the forward input
    float* __restrict__ partial,   // (slices, M, C/groups, KH, KW): one sum per slice
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups,
    int rows_per_slice)            // output rows (n, oh) a slice sums over
{
    __shared__ float s_sum[V5_TAPS][V5_THREADS / 32];      // each warp's sum of each tap
    const int KK = KH * KW;
    const PairSlice p = pair_slice(N, C, M, KK, H_out, groups, rows_per_slice);
    const int m = p.m, xc = p.x_channel;
    const long long L = (long long)H_out * W_out, plane = (long long)H * W;
    // the block's threads: cols columns side by side, runners of them down the slice's rows
    const int cols = min(W_out, V5_THREADS), runners = V5_THREADS / cols;
    const int u = threadIdx.x / cols, c0 = threadIdx.x - u * cols;
    const int run = (p.r1 - p.r0 + runners - 1) / runners; // rows a runner walks
    const int ra = min(p.r1, p.r0 + u * run), rb = min(p.r1, ra + run);   // empty past the runners
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    for (int t0 = 0; t0 < KK; t0 += V5_TAPS) {             // passes of up to V5_TAPS taps
        const int taps = min(KK - t0, V5_TAPS);
        int off_h[V5_TAPS], off_w[V5_TAPS];                // tap t0 + j: x cell (oh*S_h - P_h + off_h, ow*S_w - P_w + off_w)
        float acc[V5_TAPS];
#pragma unroll
        for (int j = 0; j < V5_TAPS; ++j) {
            const int t = min(t0 + j, KK - 1);             // past the last tap: never added (j < taps)
            off_h[j] = t / KW * dil_h;
            off_w[j] = t % KW * dil_w;
            acc[j] = 0.0f;
        }
        for (int ow = c0; ow < W_out; ow += cols) {
            const int iw0 = ow * stride_w - pad_w;
            int n = ra / H_out, oh = ra - n * H_out;
            for (int r = ra; r < rb; ++r) {                // output (n, oh, ow), row r = n*H_out + oh
                const float d = dy[((long long)n * M + m) * L + (long long)oh * W_out + ow];
                const float* __restrict__ x_c = x + ((long long)n * C + xc) * plane;
                const int ih0 = oh * stride_h - pad_h;
#pragma unroll
                for (int j = 0; j < V5_TAPS; ++j) {
                    const int ih = ih0 + off_h[j], iw = iw0 + off_w[j];
                    if (j < taps && ih >= 0 && ih < H && iw >= 0 && iw < W) acc[j] += d * x_c[(long long)ih * W + iw];
                }
                if (++oh == H_out) { oh = 0; ++n; }
            }
        }
        // the block's sum of each tap: a warp's lanes with shuffles, then the warps' sums in order
#pragma unroll
        for (int j = 0; j < V5_TAPS; ++j) {
            float v = acc[j];
            for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
            if (lane == 0) s_sum[j][warp] = v;
        }
        __syncthreads();
        if (threadIdx.x < taps) {
            float total = 0.0f;
            for (int w = 0; w < V5_THREADS / 32; ++w) total += s_sum[threadIdx.x][w];
            store(partial, p.first + t0 + threadIdx.x, total);
        }
        __syncthreads();                                   // s_sum is read before the next pass writes it
    }
}

// =======================================================================================
// Two helpers of the host's compositions: copies, not versions of an operation.
//
// flip_filter: flipped_conv computes grad_input as a forward convolution of dy, whose filter is
// w with its taps flipped and, within each group, its filters and channels swapped:
//   flipped[g*Cg + c, o, a, b] = w[g*Mg + o, c, KH-1-a, KW-1-b]
// A row kernel (FOR_EACH_ROW, as unfold's): one thread row per row (g*Cg + c, o) of the result,
// its threads walking the KH*KW taps. Flipping both axes reverses the tap's flat index a*KW + b.
//
// add_slices: grad_weight v3-v5 leave one partial sum per slice of the output rows, partial
// (slices, M, Cg, KH, KW); dw is their sum, the slices added in order 0, 1, ... (as the NumPy
// twin adds them). One thread row per (filter, channel) row of dw, a thread per tap.
// One launch each, where the array library's generic copy and reduction cost the host 3-4x the
// time of a planned launch (H100 host: flipping through views and a copy 19-31 us, a sum over
// the slices 19 us; a planned row kernel about 6).
// =======================================================================================
extern "C" __global__ void flip_filter(
    const float* __restrict__ w,          // (M, Cg, KH, KW)
    float* __restrict__ flipped,          // (groups*Cg, Mg, KH, KW)
    unsigned rows,                        // groups*Cg*Mg = M*Cg
    int Mg, int Cg, int taps)             // taps = KH*KW
{
    FOR_EACH_ROW(row, rows) {
        const int o = row % Mg, gc = row / Mg;            // row = (g*Cg + c)*Mg + o
        const int g = gc / Cg, c = gc % Cg;
        const float* src = w + ((long long)(g * Mg + o) * Cg + c) * taps;
        for (int i = threadIdx.x; i < taps; i += blockDim.x)
            store(flipped, (long long)row * taps + i, src[taps - 1 - i]);
    }
}

extern "C" __global__ void add_slices(
    const float* __restrict__ partial,    // (slices, M, Cg, KH, KW)
    float* __restrict__ dw,               // (M, Cg, KH, KW)
    unsigned rows,                        // M*Cg
    int slices, int taps)                 // taps = KH*KW
{
    const long long size = (long long)rows * taps;       // values a slice
    FOR_EACH_ROW(row, rows) {
        for (int i = threadIdx.x; i < taps; i += blockDim.x) {
            const long long cell = (long long)row * taps + i;
            float sum = partial[cell];
            for (int s = 1; s < slices; ++s) sum += partial[s * size + cell];
            store(dw, cell, sum);
        }
    }
}
