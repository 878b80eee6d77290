// 2-D convolution (PyTorch F.conv2d semantics: cross-correlation, stride, padding, dilation,
// groups, bias; zero or reflect padding), as a progression of kernels. Each version states
// what it changes from the one before; the app shows the version that ran.
//
//   v1 direct          one thread per output element, everything read from global memory
//   v2 tiled           v1 + the block's input tile (with its halo) staged in shared memory
//   v3 register tiled  v2 + each thread computes 2 pixels x 8 filters in registers
//   v4 implicit GEMM   im2col's matrix product without storing X_unroll (cuDNN's method)
//   v5 implicit GEMM   v4 on the tensor cores in TF32 (opt-in: it rounds the inputs)
//   v6 depthwise       v2 for filters that see one channel: one group per block, all its filters
//   v7 tensor cores    v5 pipelined: 32-deep k stages, 3 in flight, register-sized warp tiles, ldmatrix
//   v8 tensor cores    v7 + 16-byte input copies where stride-1 rows are contiguous
//   v9 tensor cores    v8 with bf16 or fp16 operands (m16n8k16), fp32 sums
//   v10 tensor cores   v8 on channels-last TF32 copies of x and w: a stage is one tap, no gather
//   v11 tensor cores   v10 with bf16 or fp16 copies (rounded once, half the bytes), m16n8k16
//   v15 depthwise rows v6 without shared memory: a thread walks the input rows of a column of
//                      outputs once, in registers (3x3 and 5x5 windows, stride 1 or 2)
//   (v12-v14: conv2d_hopper.cu, Hopper's warpgroup MMA)
//
// Shapes: x (N, C, H, W), w (M, C/groups, KH, KW), y (N, M, H_out, W_out).
// Output (n, m, oh, ow) of filter m in group g = m / (M/groups) sums, over the group's
// channels c and the taps (ki, kj), x[n, g*C/groups + c, ih, iw] * w[m, c, ki, kj] with
//   ih = input_coord(oh, stride_h, pad_h, ki, dil_h),  iw = input_coord(ow, stride_w, pad_w, kj, dil_w)
// (index_math.cuh). Every kernel takes the same geometry arguments, in this order:
//   N, C, M             input batch, channels, filters
//   H, W, KH, KW        input height and width, kernel size
//   H_out, W_out        output size (window_count, computed by the host)
//   stride_h, stride_w, pad_h, pad_w, dil_h, dil_w
//                       (from H on: the window arguments of every sliding-window kernel, unfold too)
//   groups              channels and filters split into this many independent groups
//   reflect             1: padding cells mirror the image (padding_mode="reflect"); 0: zeros
// Offsets into x and y are 64-bit; v1 also indexes inside a plane with 64 bits (a plane may
// hold more than 2^31 cells), v2 and v3 with 32 bits (the host checks the plane size).
#include "index_math.cuh"

// Fetch input cell (ih, iw) of one channel plane, applying the padding rule: zero outside
// the image, or the mirrored cell (padding_mode="reflect"). The offset inside the plane is
// 32-bit (measured faster in v3's tile loads): the host refuses planes of 2^31 cells or more
// for the kernels that use it.
__device__ __forceinline__ float load_padded(const float* __restrict__ plane, int ih, int iw,
                                             int H, int W, int reflect) {
    if (reflect) {
        ih = reflect_index(ih, H);
        iw = reflect_index(iw, W);
    }
    // With reflect a cell can still be outside here, but only for halo cells of tiles that
    // overhang the output edge; the outputs that would read them are never written.
    if (ih < 0 || ih >= H || iw < 0 || iw >= W) return 0.0f;
    return plane[ih * W + iw];
}

// The batch pixel p = n*L + oh*W_out + ow of an implicit GEMM (v4, v5; L = H_out*W_out): where
// its sample's channels of group g start in x, and (ih0, iw0), the input cell its tap (0, 0) reads.
__device__ __forceinline__ const float* gemm_column(const float* x, int p, int L, int W_out, int C, int Cg, int g,
                                                    int H, int W, int stride_h, int stride_w, int pad_h, int pad_w,
                                                    int dil_h, int dil_w, int& ih0, int& iw0) {
    const int n = p / L, l = p % L;
    ih0 = input_coord(l / W_out, stride_h, pad_h, 0, dil_h);
    iw0 = input_coord(l % W_out, stride_w, pad_w, 0, dil_w);
    return x + ((long long)n * C + (long long)g * Cg) * H * W;
}

// =======================================================================================
// v1 direct: ONE THREAD PER OUTPUT ELEMENT (the source article's kernel, PMPP fig. 16.4).
// grid  = (ceil(H_out*W_out / blockDim.x), ceil(M / blockDim.y), N)
// block = (pixels, filters): threadIdx.x walks consecutive output pixels of one sample
//         (p = oh*W_out + ow, so a warp reads neighbouring input cells), threadIdx.y picks
//         the filter.
// Loop order: taps outside, channels inside. A tap that falls in the zero padding is
// skipped once for all channels, and the innermost loop is a plain strided multiply-add
// (unrolled 4 times when there are many channels, so several loads are in flight).
// Every input cell is read from global memory by every output that uses it (KH*KW*M
// times in all); the caches absorb part of that.
// =======================================================================================
extern "C" __global__ void conv2d_v1_direct(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups, int reflect)
{
    const long long L = (long long)H_out * W_out;          // output pixels per sample
    const long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y * blockDim.y + threadIdx.y;
    const int n = blockIdx.z;
    if (p >= L || m >= M) return;                          // edge blocks overhang
    const int oh = (int)(p / W_out), ow = (int)(p % W_out);

    const int Cg = C / groups;                             // channels one filter sees
    const int g = m / (M / groups);                        // this filter's group
    const long long plane = (long long)H * W;
    const float* __restrict__ x_n = x + ((long long)n * C + (long long)g * Cg) * plane;
    const float* __restrict__ w_m = w + (long long)m * Cg * KH * KW;

    float acc = bias ? bias[m] : 0.0f;
    for (int ki = 0; ki < KH; ++ki) {
        int ih = input_coord(oh, stride_h, pad_h, ki, dil_h);
        if (reflect) ih = reflect_index(ih, H);
        if (ih < 0 || ih >= H) continue;                   // a row of zero padding
        const float* __restrict__ x_row = x_n + (long long)ih * W;        // channel 0, row ih
        const float* __restrict__ w_row = w_m + ki * KW;
        for (int kj = 0; kj < KW; ++kj) {
            int iw = input_coord(ow, stride_w, pad_w, kj, dil_w);
            if (reflect) iw = reflect_index(iw, W);
            if (iw < 0 || iw >= W) continue;
            const float* __restrict__ xp = x_row + iw;     // tap (ki, kj) of channel 0 ...
            const float* __restrict__ wp = w_row + kj;
            if (Cg >= 8) {   // many channels: 4 loads in flight per thread (measured 1.6x on resnet56)
#pragma unroll 4
                for (int c = 0; c < Cg; ++c, xp += plane, wp += KH * KW)   // ... then channel by channel
                    acc += *xp * *wp;
            } else {         // an RGB image: the plain loop is faster
                for (int c = 0; c < Cg; ++c, xp += plane, wp += KH * KW)
                    acc += *xp * *wp;
            }
        }
    }
    store(y, ((long long)n * M + m) * L + p, acc);
}

// =======================================================================================
// v2 tiled = v1 + SHARED MEMORY (PMPP ch. 7 and 16).
// A block computes a tile of blockDim.y x blockDim.x output pixels of ONE filter.
// Neighbouring outputs read overlapping input windows, so for each input channel the block
// first copies the input cells its tile needs (the tile plus its halo) into shared memory:
//   in_h = (blockDim.y - 1)*stride_h + (KH - 1)*dil_h + 1 rows,  in_w likewise,
// applying the padding rule while it copies, plus that channel's KH x KW weights. After a
// barrier every thread reads its taps from shared memory. Each input cell now comes from
// global memory about once per block instead of once per output that uses it.
// grid  = (tiles_h * tiles_w, M, N): blockIdx.x is the linearised tile (PMPP fig. 16.12)
// block = (TILE, TILE) threads, one output pixel each.
// =======================================================================================
extern "C" __global__ void conv2d_v2_tiled(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups, int reflect,
    int tiles_w,        // tiles per output row
    int in_h, int in_w) // the shared input tile, halo included
{
    extern __shared__ float smem[];
    float* s_in = smem;                                    // [in_h][in_w], one channel
    float* s_w = smem + in_h * in_w;                       // [KH][KW], the same channel

    const int n = blockIdx.z, m = blockIdx.y;
    const int tile_oh = (blockIdx.x / tiles_w) * blockDim.y;   // the tile's first output row
    const int tile_ow = (blockIdx.x % tiles_w) * blockDim.x;   // and column
    const int oh = tile_oh + threadIdx.y, ow = tile_ow + threadIdx.x;
    const int ih0 = input_coord(tile_oh, stride_h, pad_h, 0, dil_h);   // input cell of s_in[0][0]
    const int iw0 = input_coord(tile_ow, stride_w, pad_w, 0, dil_w);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;

    const int Cg = C / groups, g = m / (M / groups);
    const long long plane = (long long)H * W;
    float acc = bias ? bias[m] : 0.0f;
    for (int c = 0; c < Cg; ++c) {
        // 1. the tile + halo of channel c, and filter m's weights for it
        const float* __restrict__ x_c = x + ((long long)n * C + g * Cg + c) * plane;
        for (int i = tid; i < in_h * in_w; i += nthreads)
            s_in[i] = load_padded(x_c, ih0 + i / in_w, iw0 + i % in_w, H, W, reflect);
        for (int i = tid; i < KH * KW; i += nthreads)
            s_w[i] = w[((long long)m * Cg + c) * KH * KW + i];
        __syncthreads();
        // 2. the taps, from shared memory: tap (ki, kj) of output (oh, ow) is the input cell
        //    input_coord(oh, ...ki...), which sits input_coord(...) - ih0 rows into the tile
        if (oh < H_out && ow < W_out) {
            for (int ki = 0; ki < KH; ++ki) {
                const int r = input_coord(oh, stride_h, pad_h, ki, dil_h) - ih0;
                for (int kj = 0; kj < KW; ++kj) {
                    const int q = input_coord(ow, stride_w, pad_w, kj, dil_w) - iw0;
                    acc += s_in[r * in_w + q] * s_w[ki * KW + kj];
                }
            }
        }
        __syncthreads();   // everyone is done with channel c before it is overwritten
    }
    if (oh < H_out && ow < W_out)
        store(y, (((long long)n * M + m) * H_out + oh) * W_out + ow, acc);
}

// =======================================================================================
// v3 register tiled = v2 + REGISTER BLOCKING: each thread computes several outputs.
// In v2 every multiply-add needs two shared-memory loads (an input and a weight), and
// shared-memory bandwidth, not arithmetic, limits it. Here one block computes a tile of
// TILE_H x (TILE_W * PIXELS_PER_THREAD) pixels for FILTERS_PER_BLOCK filters of one group,
// and thread (tx, ty) keeps PIXELS_PER_THREAD x FILTERS_PER_BLOCK = 16 sums in registers:
// per tap it issues 2 float4 weight loads (the same address for the whole warp: a broadcast)
// and 2 input loads for 16 multiply-adds. Its pixels (ty, tx + p*TILE_W) are TILE_W apart,
// so neighbouring threads still read neighbouring shared-memory words.
// Two smaller changes ride along: `cb` channels are staged per barrier instead of one, and
// shared rows are `pitch` floats apart (pitch >= in_w; a warp spans two thread rows, and
// pitch = 16 mod 32 puts those rows in different memory banks).
// Weights sit in shared memory as [c][ki][kj][filter], so one tap's 8 weights are 32 bytes.
// grid  = (tiles_h * tiles_w, groups * m_blocks, N), block = (TILE_W, TILE_H).
// =======================================================================================
#define FILTERS_PER_BLOCK 8
#define PIXELS_PER_THREAD 2

extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v3_register_tiled(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M,                  // the same arguments as v2, then v3's own
    int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w, int pad_h, int pad_w,
    int dil_h, int dil_w, int groups, int reflect,
    int tiles_w,        // tiles per output row
    int m_blocks,       // filter blocks per group: blockIdx.y = group * m_blocks + block
    int cb_max,         // channels staged in shared memory per barrier
    int in_h, int in_w, // the shared input tile, halo included
    int pitch)          // floats between shared rows
{
    extern __shared__ float4 smem4[];                // float4 so the weights are 16-byte aligned
    float* s_in = reinterpret_cast<float*>(smem4);   // [cb_max][in_h][pitch]
    const int in_size = (cb_max * in_h * pitch + 3) & ~3;                // rounded up to float4
    float* s_w = s_in + in_size;                     // [cb_max][KH][KW][FILTERS_PER_BLOCK]

    const int n = blockIdx.z;
    const int Mg = M / groups, Cg = C / groups;
    const int g = blockIdx.y / m_blocks;             // group of this block's filters
    const int m0 = g * Mg + (blockIdx.y % m_blocks) * FILTERS_PER_BLOCK;
    const int m_end = min(m0 + FILTERS_PER_BLOCK, (g + 1) * Mg);

    const int tile_w = blockDim.x * PIXELS_PER_THREAD;
    const int tile_oh = (blockIdx.x / tiles_w) * blockDim.y;  // first output row of the tile
    const int tile_ow = (blockIdx.x % tiles_w) * tile_w;      // first output column
    const int ih0 = input_coord(tile_oh, stride_h, pad_h, 0, dil_h);   // input cell of row 0
    const int iw0 = input_coord(tile_ow, stride_w, pad_w, 0, dil_w);
    const int oh = tile_oh + threadIdx.y;

    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;
    const int KK = KH * KW;
    const long long plane = (long long)H * W;

    float acc[PIXELS_PER_THREAD][FILTERS_PER_BLOCK];
#pragma unroll
    for (int f = 0; f < FILTERS_PER_BLOCK; ++f) {
        const float b = (bias && m0 + f < m_end) ? bias[m0 + f] : 0.0f;
#pragma unroll
        for (int p = 0; p < PIXELS_PER_THREAD; ++p) acc[p][f] = b;
    }

    for (int c0 = 0; c0 < Cg; c0 += cb_max) {
        const int cb = min(cb_max, Cg - c0);
        // 1. input tile + halo of cb channels: consecutive threads load consecutive columns
        const float* __restrict__ x_slab = x + ((long long)n * C + g * Cg + c0) * plane;
        for (int i = tid; i < cb * in_h * in_w; i += nthreads) {
            const int c = i / (in_h * in_w);
            const int r = i - c * (in_h * in_w);
            const int rr = r / in_w, cc = r - rr * in_w;
            s_in[(c * in_h + rr) * pitch + cc] = load_padded(x_slab + c * plane, ih0 + rr, iw0 + cc, H, W, reflect);
        }
        // 2. weights, transposed to [c][ki][kj][f] (zeros past m_end)
        for (int i = tid; i < FILTERS_PER_BLOCK * cb * KK; i += nthreads) {
            const int f = i % FILTERS_PER_BLOCK;
            const int r = i / FILTERS_PER_BLOCK;     // c * KK + ki * KW + kj
            s_w[i] = (m0 + f < m_end) ? w[((long long)(m0 + f) * Cg + c0) * KK + r] : 0.0f;
        }
        __syncthreads();
        // 3. accumulate: tap (ki, kj) of pixel p reads shared row input_coord(oh, ..ki..) - ih0
        //    = threadIdx.y*stride_h + ki*dil_h, and column
        //    input_coord(tile_ow + tx + p*TILE_W, ..kj..) - iw0 = (tx + p*TILE_W)*stride_w + kj*dil_w
        //    (written out: measured faster than letting the compiler cancel the two formulas)
        for (int c = 0; c < cb; ++c) {
            for (int ki = 0; ki < KH; ++ki) {
                const float* s_row = s_in + (c * in_h + threadIdx.y * stride_h + ki * dil_h) * pitch + threadIdx.x * stride_w;
                const float4* s_tap = reinterpret_cast<const float4*>(s_w + ((c * KH + ki) * KW) * FILTERS_PER_BLOCK);
                for (int kj = 0; kj < KW; ++kj) {
                    const float4 wa = s_tap[2 * kj], wb = s_tap[2 * kj + 1];  // same address for
                    const float wt[FILTERS_PER_BLOCK] = {wa.x, wa.y, wa.z, wa.w,  // the whole warp:
                                                         wb.x, wb.y, wb.z, wb.w}; // a broadcast
#pragma unroll
                    for (int p = 0; p < PIXELS_PER_THREAD; ++p) {
                        const float v = s_row[p * blockDim.x * stride_w + kj * dil_w];
#pragma unroll
                        for (int f = 0; f < FILTERS_PER_BLOCK; ++f) acc[p][f] += v * wt[f];
                    }
                }
            }
        }
        __syncthreads();   // everyone is done with this slab before it is overwritten
    }
    if (oh < H_out) {
#pragma unroll   // constant indices keep acc[][] in registers
        for (int p = 0; p < PIXELS_PER_THREAD; ++p) {
            const int ow = tile_ow + threadIdx.x + p * blockDim.x;
            if (ow >= W_out) continue;
#pragma unroll
            for (int f = 0; f < FILTERS_PER_BLOCK; ++f)
                if (m0 + f < m_end)
                    store(y, (((long long)n * M + m0 + f) * H_out + oh) * W_out + ow, acc[p][f]);
        }
    }
}

// =======================================================================================
// v4 implicit GEMM = im2col's matrix product WITHOUT WRITING X_unroll (cuDNN's method).
// Unlike v1-v3 this is not a stencil: per group, the convolution is the product
//   Y[m][p] = sum_k  W[m][k] * X_unroll[k][p]
// with k = (c, ki, kj) flattened (c*KH*KW + ki*KW + kj, the order of w's rows) and
// p = n*L + oh*W_out + ow a pixel of ANY sample (L = H_out*W_out): the batch is one long row
// of pixels, so small images and big batches both fill the GPU. X_unroll[k][p] is input
// cell (c, input_coord(oh, ..ki..), input_coord(ow, ..kj..)) of sample n: the block gathers
// it from x while it loads its tile, so the KH*KW-times larger matrix is never stored.
//
// Tiling (a classic register-blocked SGEMM):
//   block tile  = IG_BM filters x IG_BN pixels, stepping through k IG_BK at a time;
//   thread tile = 8 filters x 8 pixels = 64 sums in registers. Per k a thread reads
//   8 weights and 8 inputs from shared memory (four float4 loads) for 64 multiply-adds.
//   The 8 filters are two groups of 4, IG_BM/2 apart (pixels likewise, IG_BN/2 apart), so the
//   float4 reads of neighbouring threads are neighbouring words: no bank conflicts.
//   Double buffering: while the block multiplies tile t from shared memory, each thread's
//   loads of tile t+1 are already in flight into registers (one __syncthreads per tile).
// grid = (ceil(N*L / IG_BN), groups * m_blocks), block = IG_THREADS threads.
// =======================================================================================
#define IG_BM 64                                    // filters per block
#define IG_BN 128                                   // pixels per block
#define IG_BK 16                                    // k values per step
#define IG_THREADS ((IG_BM / 8) * (IG_BN / 8))      // == IG_BN: each thread owns 8 x 8 outputs
#define IG_A_STEP (IG_THREADS / IG_BM)              // k columns between a thread's weight loads

extern "C" __global__ void __launch_bounds__(IG_THREADS) conv2d_v4_implicit_gemm(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out,
    int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w,
    int groups, int reflect,
    int m_blocks)       // filter blocks per group: blockIdx.y = group * m_blocks + block
{
    __shared__ __align__(16) float As[2][IG_BK][IG_BM];   // weights, k-major: As[k][m]
    __shared__ __align__(16) float Bs[2][IG_BK][IG_BN];   // gathered inputs: Bs[k][p]

    const int t = threadIdx.x;
    const int Cg = C / groups, Mg = M / groups;
    const int KK = KH * KW, Kdim = Cg * KK;         // the GEMM's inner dimension
    const int L = H_out * W_out;
    const int P = N * L;                             // pixels of the whole batch (< 2^31: host checks)
    const int g = blockIdx.y / m_blocks;             // this block's group
    const int m0 = (blockIdx.y % m_blocks) * IG_BM;  // its first filter, within the group
    const int p0 = blockIdx.x * IG_BN;               // its first pixel

    // What this thread LOADS. Weights: filter row a_m, k columns a_k, a_k + IG_A_STEP, ...
    // (consecutive threads take consecutive filters: conflict-free shared stores).
    const int a_m = t % IG_BM, a_k = t / IG_BM;
    const bool a_ok = m0 + a_m < Mg;
    const float* __restrict__ w_row = w + (long long)(g * Mg + m0 + a_m) * Kdim;
    // Inputs: pixel column b_p = p0 + t (IG_THREADS == IG_BN), every k of each tile.
    // Its tap-(0, 0) input cell (ih0, iw0) and sample base are computed once, here.
    const int b_p = p0 + t;
    const bool b_ok = b_p < P;
    int ih0 = 0, iw0 = 0;
    const float* __restrict__ x_n =
        b_ok ? gemm_column(x, b_p, L, W_out, C, Cg, g, H, W, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, ih0, iw0) : x;
    // The next k this thread gathers, split into (kc, ki, kj), as row / column offsets
    // (tap (ki, kj) reads (ih0 + k_ih, iw0 + k_iw) with k_ih = ki*dil_h, k_iw = kj*dil_w) and
    // as a flat offset in x_n. Every thread walks k = 0, 1, 2, ... in order, so these are
    // carried along: no division in the loop.
    int kc = 0, ki = 0, kj = 0, k_ih = 0, k_iw = 0;
    long long k_off = 0;
    const long long pix_off = (long long)ih0 * W + iw0;   // may be negative: padding

    float a_next[IG_BK / IG_A_STEP], b_next[IG_BK];
    auto load_tile = [&](int k0) {                   // global -> registers
#pragma unroll
        for (int j = 0; j < IG_BK / IG_A_STEP; ++j) {
            const int k = k0 + a_k + j * IG_A_STEP;
            a_next[j] = (a_ok && k < Kdim) ? w_row[k] : 0.0f;
        }
#pragma unroll
        for (int j = 0; j < IG_BK; ++j) {
            const int ih = ih0 + k_ih, iw = iw0 + k_iw;
            float v = 0.0f;
            if (b_ok && k0 + j < Kdim) {
                if (reflect)                         // uniform branch: the slow, rare mode
                    v = x_n[(long long)kc * H * W + (long long)reflect_index(ih, H) * W + reflect_index(iw, W)];
                else if ((unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W)  // inside
                    v = x_n[k_off + pix_off];        // (unsigned: one compare covers < 0 too)
            }
            b_next[j] = v;
            // step to k + 1: next kj; past the last kj, next ki; past the last ki, next c
            ++kj; k_iw += dil_w; k_off += dil_w;
            if (kj == KW) {
                kj = 0; k_iw = 0; ++ki; k_ih += dil_h;
                k_off += (long long)dil_h * W - (long long)KW * dil_w;
                if (ki == KH) {
                    ki = 0; k_ih = 0; ++kc;
                    k_off += (long long)H * W - (long long)KH * dil_h * W;
                }
            }
        }
    };
    auto store_tile = [&](int buf) {                 // registers -> shared memory
#pragma unroll
        for (int j = 0; j < IG_BK / IG_A_STEP; ++j) As[buf][a_k + j * IG_A_STEP][a_m] = a_next[j];
#pragma unroll
        for (int j = 0; j < IG_BK; ++j) Bs[buf][j][t] = b_next[j];
    };

    // What this thread COMPUTES: filters tm*4 + {0..3} and IG_BM/2 + tm*4 + {0..3},
    // pixels tn*4 + {0..3} and IG_BN/2 + tn*4 + {0..3} of the block tile.
    const int tn = t % (IG_BN / 8), tm = t / (IG_BN / 8);
    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j) acc[i][j] = 0.0f;

    const int tiles = (Kdim + IG_BK - 1) / IG_BK;
    load_tile(0);
    store_tile(0);
    __syncthreads();
    for (int tile = 0; tile < tiles; ++tile) {
        const int buf = tile & 1;
        if (tile + 1 < tiles) load_tile((tile + 1) * IG_BK);   // in flight during the FMAs
#pragma unroll
        for (int k = 0; k < IG_BK; ++k) {
            const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][k][tm * 4]);
            const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][k][IG_BM / 2 + tm * 4]);
            const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][k][tn * 4]);
            const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][k][IG_BN / 2 + tn * 4]);
            const float a[8] = {a0.x, a0.y, a0.z, a0.w, a1.x, a1.y, a1.z, a1.w};
            const float b[8] = {b0.x, b0.y, b0.z, b0.w, b1.x, b1.y, b1.z, b1.w};
#pragma unroll
            for (int i = 0; i < 8; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        // the other buffer was last read before the previous barrier: safe to overwrite
        if (tile + 1 < tiles) store_tile(buf ^ 1);
        __syncthreads();
    }

    // Write back: output (n, g*Mg + m, oh, ow) is y[(n*M + g*Mg + m)*L + l].
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        const int p = p0 + (j < 4 ? tn * 4 + j : IG_BN / 2 + tn * 4 + j - 4);
        if (p >= P) continue;
        const int n = p / L, l = p % L;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            const int m = m0 + (i < 4 ? tm * 4 + i : IG_BM / 2 + tm * 4 + i - 4);
            if (m >= Mg) continue;
            const int mm = g * Mg + m;
            store(y, ((long long)n * M + mm) * L + l, acc[i][j] + (bias ? bias[mm] : 0.0f));
        }
    }
}

// =======================================================================================
// v5 implicit GEMM on TENSOR CORES (TF32) = v4's product, with the multiply-adds done by
// the tensor cores in TF32 (inputs rounded to 10 mantissa bits, sums in fp32: the same
// trade PyTorch makes with allow_tf32). Opt-in: algorithm="implicit_gemm_tf32".
// What changes from v4:
//   - a WARP, not a thread, is the unit of work: `mma.sync.m16n8k8` multiplies a 16 x 8
//     TF32 tile of weights by an 8 x 8 tile of inputs into a 16 x 8 tile of sums, the
//     operands spread over the warp's 32 registers in a fixed layout (lane = 4*g + t):
//       A (16 x 8): a0 = (g, t), a1 = (g+8, t), a2 = (g, t+4), a3 = (g+8, t+4)
//       B ( 8 x 8): b0 = (k = t, n = g), b1 = (k = t+4, n = g)
//       C (16 x 8): c0 = (g, 2t), c1 = (g, 2t+1), c2 = (g+8, 2t), c3 = (g+8, 2t+1)
//     each warp computes 32 filters x 64 pixels = 2 x 8 such tiles, sums in registers;
//   - shared memory is filled by cp.async (global -> shared without passing through
//     registers; padding cells are zero-filled by the copy), two stages deep: the loads of
//     step t+1 are in flight while the tensor cores work on step t.
// The gather of X_unroll is v4's: a thread owns one pixel column of the block tile and walks
// k = (c, ki, kj) in order, carrying the offsets (no division in the loop); with more threads
// than columns, TC_SPLIT threads share a column, each taking its slice of every stage's k.
// grid = (ceil(N*L / TC_BN), groups * m_blocks), block = TC_THREADS threads.
// =======================================================================================
#define TC_BM 64                   // filters per block
#define TC_BN 128                  // pixels per block
#define TC_BK 16                   // k per stage (two k8 steps)
#define TC_WARPS_N (TC_BN / 64)    // warps side by side along the pixels; each 32 x 64 outputs
#define TC_THREADS (32 * (TC_BM / 32) * TC_WARPS_N)
#define TC_SPLIT (TC_THREADS / TC_BN)   // threads gathering one pixel column (1 or 2)
#define TC_APITCH (TC_BK + 4)      // shared row pitches, padded so a warp's fragment loads
#define TC_BPITCH (TC_BN + 8)      // hit 32 different banks

__device__ __forceinline__ void cp_async4(float* smem, const float* gmem, bool inside) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" :: "r"(dst), "l"(gmem), "r"(inside ? 4 : 0));
}
__device__ __forceinline__ void cp_async16(float* smem, const float* gmem, bool inside) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(gmem), "r"(inside ? 16 : 0));
}
// The same copy kept in L1 on its way (.ca; .cg above leaves it in L2 only): for reads that a
// block's next stage repeats (v14, below in conv2d_hopper.cu).
__device__ __forceinline__ void cp_async16_l1(float* smem, const float* gmem, bool inside) {
    const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" :: "r"(dst), "l"(gmem), "r"(inside ? 16 : 0));
}
__device__ __forceinline__ unsigned to_tf32(float v) {       // round to nearest, ties away
    unsigned r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}
__device__ __forceinline__ void mma_tf32(float* c, const unsigned* a, const unsigned* b) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

extern "C" __global__ void __launch_bounds__(TC_THREADS) conv2d_v5_implicit_gemm_tf32(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M,                  // the same arguments as v4
    int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w, int pad_h, int pad_w,
    int dil_h, int dil_w, int groups, int reflect,
    int m_blocks)       // filter blocks per group: blockIdx.y = group * m_blocks + block
{
    __shared__ __align__(16) float As[2][TC_BM][TC_APITCH];   // weights, As[m][k]
    __shared__ __align__(16) float Bs[2][TC_BK][TC_BPITCH];   // gathered inputs, Bs[k][p]

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int Cg = C / groups, Mg = M / groups;
    const int KK = KH * KW, Kdim = Cg * KK;
    const int L = H_out * W_out;
    const int P = N * L;                             // < 2^31: the host checks
    const int g = blockIdx.y / m_blocks;
    const int m0 = (blockIdx.y % m_blocks) * TC_BM;  // first filter of the block, within the group
    const int p0 = blockIdx.x * TC_BN;               // first pixel of the block
    const float* __restrict__ w_g = w + (long long)g * Mg * Kdim;
    const bool vec_a = (Kdim & 3) == 0;              // weight rows 16-byte aligned: 16-byte copies

    // The input column this thread gathers: pixel b_p, its tap-(0, 0) cell (ih0, iw0); of each
    // stage's TC_BK values of k it takes the slice b_part * TC_BK / TC_SPLIT, TC_BK / TC_SPLIT long.
    const int b_col = t % TC_BN, b_part = t / TC_BN;
    const int b_p = p0 + b_col;
    const bool b_ok = b_p < P;
    int ih0 = 0, iw0 = 0;
    const float* __restrict__ x_n =
        b_ok ? gemm_column(x, b_p, L, W_out, C, Cg, g, H, W, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, ih0, iw0) : x;
    int kc = 0, ki = 0, kj = 0, k_ih = 0, k_iw = 0;  // the next k this thread gathers (v4's walk)
    const long long plane = (long long)H * W;
    auto step = [&]() {                              // k -> k + 1, carrying (kc, ki, kj)
        if (++kj == KW) { kj = 0; k_iw = 0; if (++ki == KH) { ki = 0; k_ih = 0; ++kc; } else k_ih += dil_h; }
        else k_iw += dil_w;
    };
    for (int j = 0; j < b_part * (TC_BK / TC_SPLIT); ++j) step();   // to this thread's first slice

    auto load_stage = [&](int s, int k0) {
        if (vec_a) {                                 // A: TC_BM x TC_BK weights, 16 bytes a copy
#pragma unroll
            for (int i = 0; i < (TC_BM * TC_BK / 4) / TC_THREADS; ++i) {
                const int idx = t + i * TC_THREADS, r = idx / (TC_BK / 4), k = (idx % (TC_BK / 4)) * 4;
                const bool in = m0 + r < Mg && k0 + k < Kdim;
                cp_async16(&As[s][r][k], in ? w_g + (long long)(m0 + r) * Kdim + k0 + k : w, in);
            }
        } else {                                     // rows not 16-byte aligned: 4 bytes a copy
#pragma unroll
            for (int i = 0; i < (TC_BM * TC_BK) / TC_THREADS; ++i) {
                const int idx = t + i * TC_THREADS, r = idx / TC_BK, k = idx % TC_BK;
                const bool in = m0 + r < Mg && k0 + k < Kdim;
                cp_async4(&As[s][r][k], in ? w_g + (long long)(m0 + r) * Kdim + k0 + k : w, in);
            }
        }
#pragma unroll
        for (int jj = 0; jj < TC_BK / TC_SPLIT; ++jj) {   // B: this thread's slice of column b_col
            const int j = b_part * (TC_BK / TC_SPLIT) + jj;
            int ih = ih0 + k_ih, iw = iw0 + k_iw;
            if (reflect) { ih = reflect_index(ih, H); iw = reflect_index(iw, W); }
            const bool in = b_ok && k0 + j < Kdim && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;
            cp_async4(&Bs[s][j][b_col], in ? x_n + kc * plane + (long long)ih * W + iw : x, in);
            step();
        }
        for (int jj = 0; jj < TC_BK - TC_BK / TC_SPLIT; ++jj) step();   // over the other slices
        asm volatile("cp.async.commit_group;\n" ::);
    };

    const int wm = (warp / TC_WARPS_N) * 32, wn = (warp % TC_WARPS_N) * 64;   // this warp's 32 x 64 tile
    const int gr = lane / 4, tq = lane % 4;                  // g and t of the fragment layouts
    float acc[2][8][4];
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

    const int tiles = (Kdim + TC_BK - 1) / TC_BK;
    load_stage(0, 0);
    for (int tile = 0; tile < tiles; ++tile) {
        const int s = tile & 1;
        if (tile + 1 < tiles) {
            load_stage(s ^ 1, (tile + 1) * TC_BK);        // in flight during this step's math
            asm volatile("cp.async.wait_group 1;\n" ::);  // this step's copies have landed
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TC_BK; kk += 8) {
            unsigned a[2][4], b[8][2];
#pragma unroll
            for (int i = 0; i < 2; ++i) {
                const int r = wm + i * 16 + gr;
                a[i][0] = to_tf32(As[s][r][kk + tq]);
                a[i][1] = to_tf32(As[s][r + 8][kk + tq]);
                a[i][2] = to_tf32(As[s][r][kk + tq + 4]);
                a[i][3] = to_tf32(As[s][r + 8][kk + tq + 4]);
            }
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                b[j][0] = to_tf32(Bs[s][kk + tq][wn + j * 8 + gr]);
                b[j][1] = to_tf32(Bs[s][kk + tq + 4][wn + j * 8 + gr]);
            }
#pragma unroll
            for (int i = 0; i < 2; ++i)
#pragma unroll
                for (int j = 0; j < 8; ++j) mma_tf32(acc[i][j], a[i], b[j]);
        }
        __syncthreads();   // everyone is done with stage s before it is refilled
    }

    // Write back from the registers: sum e of tile (i, j) is filter wm + 16i + gr (+8 for e >= 2),
    // pixel wn + 8j + 2tq (+1 for odd e).
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int m = m0 + wm + i * 16 + gr + (e >= 2 ? 8 : 0);
            if (m >= Mg) continue;
            const int mm = g * Mg + m;
            const float b_m = bias ? bias[mm] : 0.0f;
#pragma unroll
            for (int j = 0; j < 8; ++j) {
                const int p = p0 + wn + j * 8 + 2 * tq + (e & 1);
                if (p >= P) continue;
                const int n = p / L, l = p % L;
                store(y, ((long long)n * M + mm) * L + l, acc[i][j][e] + b_m);
            }
        }
    }
}

// =======================================================================================
// v6 depthwise = v2 for filters that see ONE channel (C/groups == 1): depthwise layers
// (groups = channels) and single-channel images. v3 fills each thread with 8 filters that
// share the input; here a group has one input channel and only a few filters (Mg < 8), so
// v3's filter slots would sit empty. Instead:
//   - a block is one tile of ONE GROUP: its channel's input tile and its Mg filters' weights
//     are staged once, and the block computes every filter of the group from them;
//   - each thread computes DW_PIXELS outputs of a row, blockDim.x apart (as in v3), so a warp
//     reads consecutive shared words and stores consecutive outputs;
//   - the tile's shape is chosen by the host to fit the output (a 56-wide layer gets 64-wide
//     tiles, a 4096-wide image 128-wide ones): little work is wasted past the edge.
// Per tap a thread issues one shared weight load (the same address for the warp: a broadcast)
// and DW_PIXELS input loads for DW_PIXELS multiply-adds: the loop is bound by shared-memory
// loads, and the whole kernel by the bytes of x and y, which it touches about once.
// grid  = (tiles_h * tiles_w, groups, N), block = (threads_w, threads_h), at most 256 threads.
// =======================================================================================
#define DW_PIXELS 4   // outputs per thread, blockDim.x apart along a row (the host may use fewer)

extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v6_depthwise(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M,                  // the same arguments as v2, then v6's own
    int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w, int pad_h, int pad_w,
    int dil_h, int dil_w, int groups, int reflect,
    int pixels,         // outputs per thread (1 to DW_PIXELS)
    int tiles_w,        // tiles per output row
    int in_h, int in_w, // the shared input tile, halo included
    int pitch)          // floats between shared rows
{
    extern __shared__ float smem[];
    float* s_in = smem;                              // [in_h][pitch]: the group's one channel
    float* s_w = smem + in_h * pitch;                // [Mg][KH][KW]: the group's filters

    const int n = blockIdx.z, g = blockIdx.y;        // C/groups == 1: group g reads channel g
    const int Mg = M / groups, KK = KH * KW;
    const int tile_w = blockDim.x * pixels;
    const int tile_oh = (blockIdx.x / tiles_w) * blockDim.y;  // first output row of the tile
    const int tile_ow = (blockIdx.x % tiles_w) * tile_w;      // first output column
    const int ih0 = input_coord(tile_oh, stride_h, pad_h, 0, dil_h);   // input cell of s_in[0][0]
    const int iw0 = input_coord(tile_ow, stride_w, pad_w, 0, dil_w);
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;

    // 1. the channel's input tile + halo (consecutive threads load consecutive columns), and
    //    the group's Mg filters (w is [M][1][KH][KW], so they are Mg*KK consecutive floats)
    const float* __restrict__ x_c = x + ((long long)n * C + g) * ((long long)H * W);
    for (int i = tid; i < in_h * in_w; i += nthreads) {
        const int r = i / in_w, c = i - r * in_w;
        s_in[r * pitch + c] = load_padded(x_c, ih0 + r, iw0 + c, H, W, reflect);
    }
    for (int i = tid; i < Mg * KK; i += nthreads) s_w[i] = w[(long long)g * Mg * KK + i];
    __syncthreads();

    const int oh = tile_oh + threadIdx.y;
    if (oh >= H_out) return;                         // no barrier follows: safe to leave
    // 2. every filter of the group from the same tile. Tap (ki, kj) of pixel p reads shared row
    //    input_coord(oh, ..ki..) - ih0 = threadIdx.y*stride_h + ki*dil_h and column
    //    input_coord(ow, ..kj..) - iw0 = (threadIdx.x + p*blockDim.x)*stride_w + kj*dil_w.
    const float* s_thread = s_in + threadIdx.y * stride_h * pitch + threadIdx.x * stride_w;
    const int p_step = blockDim.x * stride_w;        // shared columns between a thread's pixels
    for (int f = 0; f < Mg; ++f) {
        const int m = g * Mg + f;
        float acc[DW_PIXELS];
#pragma unroll
        for (int p = 0; p < DW_PIXELS; ++p) acc[p] = bias ? bias[m] : 0.0f;
        for (int ki = 0; ki < KH; ++ki) {
            const float* s_row = s_thread + ki * dil_h * pitch;
            const float* w_row = s_w + f * KK + ki * KW;
            for (int kj = 0; kj < KW; ++kj) {
                const float wt = w_row[kj];          // a broadcast
                const float* s_tap = s_row + kj * dil_w;
#pragma unroll
                for (int p = 0; p < DW_PIXELS; ++p)
                    if (p < pixels) acc[p] += s_tap[p * p_step] * wt;
            }
        }
        const long long row = (((long long)n * M + m) * H_out + oh) * W_out;
#pragma unroll   // constant indices keep acc[] in registers
        for (int p = 0; p < DW_PIXELS; ++p) {
            const int ow = tile_ow + threadIdx.x + p * blockDim.x;
            if (p < pixels && ow < W_out) store(y, row + ow, acc[p]);
        }
    }
}

// =======================================================================================
// v7 implicit GEMM on tensor cores, PIPELINED = v5 with the changes that let the tensor
// cores run instead of waiting. v5 ran at fp32 speed: per k8 step a warp issued 24 scalar
// shared loads and 24 conversions for 16 mma instructions, and a 2-stage pipeline 16 deep
// in k left the copies of the next stage little time to land. Here:
//   1. WIDER STAGES: PIPE_BK = 32 values of k per stage (4 mma k-steps per barrier, not 2);
//   2. DEEPER PIPELINE: PIPE_STAGES = 3 shared-memory stages; while the warps multiply stage t,
//      the copies of stages t+1 and t+2 are in flight (cp.async groups, one barrier a stage);
//   3. WARP TILES SIZED FOR THE REGISTER FILE: a warp owns WM x WN = 64 x 32 (or 32 x 32)
//      outputs, MT x NT mma tiles of 16 x 8: each A fragment is used NT times, each B
//      fragment MT times; the block tile (BM x BN = 128 x 128 or 64 x 64) is chosen by the
//      host so that small layers still give every SM a block;
//   4. LDMATRIX for the weights: one `ldmatrix.x4` gives a lane its 4 A values of a 16 x 8
//      TF32 tile (ldmatrix moves 8 x 8 matrices of 16-bit values, i.e. 8 rows of 16 bytes:
//      read as 32-bit values that is an 8 x 4 block of floats, lane 4g + t receiving (g, t),
//      exactly where m16n8k8 wants a0..a3), 4 instructions instead of 16 for MT = 4;
//   5. shared rows padded so that every fragment load and every copy is free of bank
//      conflicts (pitches 36 and BN + 8 floats for TF32; 40 and BN + 4 for 16-bit operands);
//   6. SPLIT K for small layers: a late layer of 7 x 7 pixels gives each SM one or two blocks
//      that walk thousands of k one stage after the other, too few warps to hide each
//      stage's latency. The host then splits the k range over gridDim.z = k_splits blocks;
//      each adds its partial sums into y (zeroed first) with atomicAdd, bias from split 0.
//      Measured (H100, bench.suite --sweep, 128 x 128 tiles): late 7x7x512 0.52 -> 0.24 ms in
//      5 splits, 7x7x1024 1.03 -> 0.54 in 10; layers with 2+ blocks per SM lose when split.
// Unchanged from v5: weights arrive by 16-byte cp.async where rows are 16-byte aligned; the
// input gather uses 4-byte cp.async, zero-filling padding cells (v8 widens it); values are
// rounded to TF32 (cvt.rna) as a warp reads its fragments, so the result is the exact sum of
// the rounded operands, as in v5 and its NumPy twin.
//
// The gather: a thread owns VEC consecutive pixels of the block tile (VEC = 1 here, 4 in v8)
// and, of every stage's PIPE_BK values of k, a run of KP consecutive ones; it walks them in
// order carrying (c, ki, kj) (no division in the loop), then jumps over the other threads'
// runs with one mixed-radix addition (PIPE_BK - KP written as (channels, rows, columns)).
// Neighbouring lanes own neighbouring pixels of the same k: coalesced reads, and shared
// stores to consecutive words.
//
// The same body serves v8 (VEC = 4) and v9 (16-bit operands, PREC): the template
// parameters are the deltas, the extern "C" kernels below each header name one choice.
// grid = (ceil(N*L / BN), groups * m_blocks, k_splits), block = 32 * WARPS_M * WARPS_N threads.
// Measured (H100, one run, bench/results/h100_tensor_cores.json), v5 -> v7 in ms:
//   VGG-like 3x3 1.18 -> 0.81, 1x1 0.20 -> 0.12, 5x5 0.28 -> 0.26, grouped 0.65 -> 0.56,
//   late 14x14x256 0.39 -> 0.35, 7x7x512 0.73 -> 0.66, 7x7x1024 1.34 -> 1.19.
// Still 3-9x cuDNN-TF32 on 3x3 and late layers (3-4x with split K): every input value costs a
// thread ~20 instructions of gather (v8 shares the walk over 4 pixels), and a small layer
// gives each SM one or two blocks, too few warps to hide the latency of each stage (6.).
// =======================================================================================
#define PIPE_BK 32         // k per shared-memory stage
#define PIPE_STAGES 3      // shared-memory stages in flight
#define PREC_TF32 0      // operand precisions of the tensor-core kernels (v7-v9)
#define PREC_BF16 1
#define PREC_FP16 2

__device__ __forceinline__ void ldmatrix_x4(unsigned* r, const float* smem) {
    const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(smem));
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
// Two floats rounded to nearest-even 16-bit values, packed as m16n8k16 wants them: the
// element of the lower k in the lower half (cvt puts its FIRST source in the UPPER half).
__device__ __forceinline__ unsigned pack_half2(float lo, float hi, int prec) {
    unsigned r;
    if (prec == PREC_BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
template <int PREC>
__device__ __forceinline__ void mma_16bit(float* c, const unsigned* a, const unsigned* b) {
    if constexpr (PREC == PREC_BF16)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    else
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
// Split K: a block's partial sum, added to what the other splits add (out zeroed first).
__device__ __forceinline__ void store_add(float* out, long long i, float v) {
    atomicAdd(out + i, v);
    trace_store(i);
}
// Two neighbouring outputs with one 8-byte store (out + i 8-byte aligned).
__device__ __forceinline__ void store2(float* out, long long i, float a, float b) {
    *reinterpret_cast<float2*>(out + i) = make_float2(a, b);
    trace_store(i);
    trace_store(i + 1);
}

// Where output (n, mm, l) of y (N, M, H_out, W_out) lies, l = oh * W_out + ow (the tensor-core
// kernels' write-backs, v7-v14).
__device__ __forceinline__ long long y_offset(int n, int mm, int l, int M, int L) {
    return ((long long)n * M + mm) * L + l;
}

// Write back one warp's sums from the registers (v7-v13): sum e of mma tile (i, j) is filter
// m_first + 16i + g (+8 for e >= 2) of group g_idx and batch pixel p_first + 8j + 2t (+1 for odd e).
// A lane's two pixels usually sit side by side in y: one 8-byte store. (n, l) of pixel
// p_first + 8j + 2t is carried from j to j + 1. With split K (k_splits > 1) the blocks along z add
// their partial sums into a zeroed y, the bias from split 0 only.
template <int MT, int NT>
__device__ __forceinline__ void store_warp_tile(const float (&acc)[MT][NT][4], float* __restrict__ y,
    const float* __restrict__ bias, int M, int Mg, int g_idx, int L, int P, int m_first, int p_first, int k_splits)
{
    const int lane = threadIdx.x % 32, gr = lane / 4, tq = lane % 4;
    const int pj = p_first + 2 * tq;
    int n_j = pj / L, l_j = pj % L;
#pragma unroll
    for (int j = 0; j < NT; ++j) {
        const int p = pj + j * 8;
        if (p < P) {
#pragma unroll
            for (int i = 0; i < MT; ++i) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {            // rows g and g + 8 of the tile
                    const int m = m_first + i * 16 + gr + h * 8;
                    if (m >= Mg) continue;
                    const int mm = g_idx * Mg + m;
                    const float b_m = (bias && blockIdx.z == 0) ? bias[mm] : 0.0f;
                    const float v0 = acc[i][j][2 * h] + b_m, v1 = acc[i][j][2 * h + 1] + b_m;
                    const long long o = y_offset(n_j, mm, l_j, M, L);
                    if (k_splits > 1) {                      // partial sums: add
                        store_add(y, o, v0);
                        if (p + 1 < P) store_add(y, l_j + 1 < L ? o + 1 : y_offset(n_j + 1, mm, 0, M, L), v1);
                    } else if (l_j + 1 < L && p + 1 < P && (o & 1) == 0) {
                        store2(y, o, v0, v1);
                    } else {
                        store(y, o, v0);
                        if (p + 1 < P) {                 // pixel p + 1 starts the next sample
                            const int n1 = (p + 1) / L, l1 = (p + 1) % L;
                            store(y, y_offset(n1, mm, l1, M, L), v1);
                        }
                    }
                }
            }
        }
        l_j += 8;
        while (l_j >= L) { l_j -= L; ++n_j; }
    }
}

template <int BM, int BN, int WARPS_M, int WARPS_N, int VEC, int PREC>
__device__ __forceinline__ void tensor_core_conv(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;      // one warp's outputs
    constexpr int MT = WM / 16, NT = WN / 8;                 // its mma tiles
    constexpr int A_PITCH = PIPE_BK + (PREC == PREC_TF32 ? 4 : 8);   // see 5. in the header
    constexpr int B_PITCH = BN + (PREC == PREC_TF32 ? 8 : 4);
    constexpr int COLS = BN / VEC;                           // gather columns (pixel runs) of the tile
    constexpr int PARTS = THREADS / COLS;                    // threads sharing one column
    constexpr int KP = PIPE_BK / PARTS;                        // the run of k each one gathers
    static_assert(PARTS * COLS == THREADS && KP * PARTS == PIPE_BK, "gather layout");
    // The 8-warp tile runs one block per SM and lets the compiler load the next k-step's
    // fragments early (unrolled); the 4-warp tile keeps 4 blocks per SM within 128 registers
    // (rolled: unrolled, it needs 240 and would spill under the cap).
    constexpr int KK_UNROLL = THREADS == 256 ? 4 : 1;

    extern __shared__ __align__(16) float tc_smem[];
    float (*As)[BM][A_PITCH] = reinterpret_cast<float (*)[BM][A_PITCH]>(tc_smem);                 // [stage][m][k]
    float (*Bs)[PIPE_BK][B_PITCH] = reinterpret_cast<float (*)[PIPE_BK][B_PITCH]>(tc_smem + PIPE_STAGES * BM * A_PITCH);

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int Cg = C / groups, Mg = M / groups;
    const int KK = KH * KW, Kdim = Cg * KK;
    const int L = H_out * W_out, P = N * L;          // P < 2^31: the host checks
    const int HW = H * W;                            // < 2^31: the host checks
    const int g = blockIdx.y / m_blocks;
    const int m0 = (blockIdx.y % m_blocks) * BM;     // first filter of the block, within the group
    const int p0 = blockIdx.x * BN;                  // first pixel of the block
    // this block's stages of k: split blockIdx.z of k_splits (the host leaves none empty)
    const int all_tiles = (Kdim + PIPE_BK - 1) / PIPE_BK;
    const int per_split = (all_tiles + k_splits - 1) / k_splits;
    const int tile0 = blockIdx.z * per_split;
    const int tiles = min(all_tiles - tile0, per_split);
    const float* __restrict__ w_g = w + (long long)g * Mg * Kdim;
    // weight rows 16-byte aligned (Kdim a multiple of 4, w itself aligned): 16-byte copies
    const bool vec_a = (Kdim & 3) == 0 && (reinterpret_cast<unsigned long long>(w) & 15) == 0;

    // ---- the gather's state: pixels col*VEC + e (e < VEC) of the tile, k run part*KP.. ----
    const int col = t % COLS, part = t / COLS;
    int ih0[VEC], iw0[VEC];                          // input cell of tap (0, 0), per pixel
    long long base[VEC];                             // offset of its sample's group channels in x
    bool ok[VEC];                                    // pixel exists (p < P)
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
        const int p = p0 + col * VEC + e;
        ok[e] = p < P;
        const int n = ok[e] ? p / L : 0, l = ok[e] ? p % L : 0;
        ih0[e] = input_coord(l / W_out, stride_h, pad_h, 0, dil_h);
        iw0[e] = input_coord(l % W_out, stride_w, pad_w, 0, dil_w);
        base[e] = ((long long)n * C + (long long)g * Cg) * HW;
    }
    // v8's fast path: the VEC pixels are one run of a row (same sample and output row,
    // stride_w 1), so at every tap they read VEC consecutive input cells
    bool run = VEC > 1 && stride_w == 1 && !reflect && ok[VEC - 1];
    if (VEC > 1 && run) {
        const int p = p0 + col * VEC;
        run = (p % L) / W_out == ((p + VEC - 1) % L) / W_out && p / L == (p + VEC - 1) / L;
    }
    // the next k this thread gathers, as (kc, ki, kj) and the offsets they stand for
    int kc, ki, kj;
    {
        const int k = tile0 * PIPE_BK + part * KP;
        kc = k / KK; ki = (k % KK) / KW; kj = k % KW;
    }
    int k_ih = ki * dil_h, k_iw = kj * dil_w;
    long long k_c = (long long)kc * HW;
    // the jump over the other threads' runs, PIPE_BK - KP, in the same mixed radix
    const int jump = PIPE_BK - KP;
    const int jc = jump / KK, jki = (jump % KK) / KW, jkj = jump % KW;

    auto gather_one = [&](float* dst, int e) {       // one input value, 4-byte copy
        int ih = ih0[e] + k_ih, iw = iw0[e] + k_iw;
        bool in = ok[e] && kc < Cg;
        if (reflect) { ih = reflect_index(ih, H); iw = reflect_index(iw, W); }   // uniform branch
        else in = in && (unsigned)ih < (unsigned)H && (unsigned)iw < (unsigned)W;  // else zero padding
        cp_async4(dst, in ? x + base[e] + k_c + ih * W + iw : x, in);
    };
    auto load_stage = [&](int s, int k0) {
        // A: BM x PIPE_BK weights of the group's filters m0.., k0..
        if (vec_a) {
#pragma unroll
            for (int i = 0; i < BM * PIPE_BK / 4 / THREADS; ++i) {
                const int idx = t + i * THREADS, r = idx / (PIPE_BK / 4), k = (idx % (PIPE_BK / 4)) * 4;
                const bool in = m0 + r < Mg && k0 + k < Kdim;
                cp_async16(&As[s][r][k], in ? w_g + (long long)(m0 + r) * Kdim + k0 + k : w, in);
            }
        } else {
#pragma unroll
            for (int i = 0; i < BM * PIPE_BK / THREADS; ++i) {
                const int idx = t + i * THREADS, r = idx / PIPE_BK, k = idx % PIPE_BK;
                const bool in = m0 + r < Mg && k0 + k < Kdim;
                cp_async4(&As[s][r][k], in ? w_g + (long long)(m0 + r) * Kdim + k0 + k : w, in);
            }
        }
        // B: this thread's KP values of k for its VEC pixels (a rolled loop: unrolled, the
        // compiler keeps every step's addresses live at once and runs out of registers)
#pragma unroll 1
        for (int j = 0; j < KP; ++j) {
            float* dst = &Bs[s][part * KP + j][col * VEC];
            if constexpr (VEC > 1) {
                const int ih = ih0[0] + k_ih, iw = iw0[0] + k_iw;
                const float* src = x + base[0] + k_c + ih * W + iw;
                if (run && kc < Cg && (unsigned)ih < (unsigned)H && iw >= 0 && iw + VEC <= W &&
                    (reinterpret_cast<unsigned long long>(src) & 15) == 0) {
                    cp_async16(dst, src, true);      // v8: the whole run in one 16-byte copy
                } else {
#pragma unroll
                    for (int e = 0; e < VEC; ++e) gather_one(dst + e, e);
                }
            } else {
                gather_one(dst, 0);
            }
            // k -> k + 1: next kj; past the last kj, next ki; past the last ki, next channel
            if (++kj == KW) {
                kj = 0; k_iw = 0;
                if (++ki == KH) { ki = 0; k_ih = 0; ++kc; k_c += HW; } else k_ih += dil_h;
            } else {
                k_iw += dil_w;
            }
        }
        // k -> k + jump: to this thread's run of the next stage (each digit carries at most once)
        kj += jkj; if (kj >= KW) { kj -= KW; ++ki; }
        ki += jki; if (ki >= KH) { ki -= KH; ++kc; }
        kc += jc;
        k_ih = ki * dil_h; k_iw = kj * dil_w; k_c = (long long)kc * HW;
        asm volatile("cp.async.commit_group;\n" ::);
    };

    // ---- what this warp computes: filters wm.. (WM of them), pixels wn.. (WN) of the tile ----
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    const int gr = lane / 4, tq = lane % 4;          // g and t of the fragment layouts
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < PIPE_STAGES - 1; ++s) {        // the pipeline fills: stages 0 and 1 in flight
        if (s < tiles) load_stage(s, (tile0 + s) * PIPE_BK);
        else asm volatile("cp.async.commit_group;\n" ::);   // empty groups keep the count uniform
    }
    for (int tile = 0; tile < tiles; ++tile) {
        // stage `tile` has landed once at most PIPE_STAGES - 2 younger groups are pending;
        // the barrier then also says every warp is done with the stage refilled below
        asm volatile("cp.async.wait_group %0;\n" :: "n"(PIPE_STAGES - 2));
        __syncthreads();
        const int next = tile + PIPE_STAGES - 1;
        if (next < tiles) load_stage(next % PIPE_STAGES, (tile0 + next) * PIPE_BK);
        else asm volatile("cp.async.commit_group;\n" ::);
        const int s = tile % PIPE_STAGES;
        if constexpr (PREC == PREC_TF32) {
#pragma unroll KK_UNROLL
            for (int kk = 0; kk < PIPE_BK; kk += 8) {
                unsigned a[MT][4], b[NT][2];
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    // lane l points at row l % 8 of matrix l / 8: matrices (rows 0-7 | 8-15) x (k 0-3 | 4-7)
                    ldmatrix_x4(a[i], &As[s][wm + i * 16 + (lane & 7) + ((lane >> 3) & 1) * 8][kk + (lane >> 4) * 4]);
#pragma unroll
                    for (int e = 0; e < 4; ++e) a[i][e] = to_tf32(__uint_as_float(a[i][e]));
                }
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    b[j][0] = to_tf32(Bs[s][kk + tq][wn + j * 8 + gr]);
                    b[j][1] = to_tf32(Bs[s][kk + tq + 4][wn + j * 8 + gr]);
                }
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_tf32(acc[i][j], a[i], b[j]);
            }
        } else {
            // m16n8k16, 16-bit operands: a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..),
            // a3 = (g+8, 2t+8..); b0 = (k = 2t..2t+1, n = g), b1 = (k = 2t+8..2t+9, n = g)
#pragma unroll KK_UNROLL
            for (int kk = 0; kk < PIPE_BK; kk += 16) {
                unsigned a[MT][4], b[NT][2];
#pragma unroll
                for (int i = 0; i < MT; ++i) {
                    const int r = wm + i * 16 + gr;
                    const float2 v0 = *reinterpret_cast<const float2*>(&As[s][r][kk + 2 * tq]);
                    const float2 v1 = *reinterpret_cast<const float2*>(&As[s][r + 8][kk + 2 * tq]);
                    const float2 v2 = *reinterpret_cast<const float2*>(&As[s][r][kk + 8 + 2 * tq]);
                    const float2 v3 = *reinterpret_cast<const float2*>(&As[s][r + 8][kk + 8 + 2 * tq]);
                    a[i][0] = pack_half2(v0.x, v0.y, PREC);
                    a[i][1] = pack_half2(v1.x, v1.y, PREC);
                    a[i][2] = pack_half2(v2.x, v2.y, PREC);
                    a[i][3] = pack_half2(v3.x, v3.y, PREC);
                }
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    const int n = wn + j * 8 + gr;
                    b[j][0] = pack_half2(Bs[s][kk + 2 * tq][n], Bs[s][kk + 2 * tq + 1][n], PREC);
                    b[j][1] = pack_half2(Bs[s][kk + 8 + 2 * tq][n], Bs[s][kk + 9 + 2 * tq][n], PREC);
                }
#pragma unroll
                for (int i = 0; i < MT; ++i)
#pragma unroll
                    for (int j = 0; j < NT; ++j) mma_16bit<PREC>(acc[i][j], a[i], b[j]);
            }
        }
    }

    store_warp_tile<MT, NT>(acc, y, bias, M, Mg, g, L, P, m0 + wm, p0 + wn, k_splits);
}

// The kernels of v7: 4-byte input copies, TF32. Large tile: 128 filters x 128 pixels, 8 warps
// of 64 x 32; small tile (layers with few filters or few pixels): 64 x 64, 4 warps of 32 x 32.
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v7_tf32_128x128(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<128, 128, 2, 4, 1, PREC_TF32>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v7_tf32_64x64(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<64, 64, 2, 2, 1, PREC_TF32>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}

// =======================================================================================
// v8 implicit GEMM on tensor cores, 16-BYTE INPUT COPIES = v7 with VEC = 4: a thread
// gathers 4 neighbouring pixels of the tile instead of 1 (and 4 times fewer k per stage).
// With stride 1 the 4 pixels of one output row read 4 neighbouring input cells at every
// tap: where those lie inside the image and start on a 16-byte boundary, one 16-byte
// cp.async moves them (4 times fewer copy instructions and address computations; a 1x1
// layer, or the tap of a 3x3 layer whose column offset is a multiple of 4, always). Anywhere
// else (padding, a run across two rows or samples, misaligned taps, reflect) the run falls
// back to v7's four 4-byte copies. The host picks v8 for stride_w == 1 without reflect.
// Measured (H100, one run), v7 -> v8 in ms: 1x1 0.118 -> 0.081 (cuDNN-TF32 0.063), VGG-like
// 0.81 -> 0.68, 5x5 0.26 -> 0.24, late 14x14x256 0.35 -> 0.31, 7x7x512 0.66 -> 0.59.
// =======================================================================================
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v8_tf32_128x128(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<128, 128, 2, 4, 4, PREC_TF32>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v8_tf32_64x64(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<64, 64, 2, 2, 4, PREC_TF32>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}

// =======================================================================================
// v9 implicit GEMM on tensor cores, 16-BIT OPERANDS (bf16 or fp16) = v8 with the
// operands rounded to 16 bits as a warp reads its fragments, and `mma.m16n8k16`: each
// instruction multiplies twice as much k as m16n8k8 in TF32, at twice the rate. Sums stay
// fp32 and the arrays stay float32 (what torch.autocast runs on tensor cores, without
// its casts to half-precision tensors). Rounding is to nearest even (cvt.rn):
//   bf16: 8 exponent bits (fp32's range), 7 mantissa bits: relative error up to 2^-9;
//   fp16: 5 exponent bits (largest 65504, no scaling here), 10 mantissa bits: 2^-12.
// What changes in the inner loop (PREC != PREC_TF32 above): a lane needs each operand in
// pairs along k, (2t, 2t+1), packed low-k-first in one 32-bit register; the weights come
// as float2 loads (their rows are k), the inputs as two loads from neighbouring k rows.
// Shared pitches change with the pattern (40 and BN + 4 floats: conflict-free again).
// Measured (H100, one run), v8 TF32 -> v9 bf16 in ms: VGG-like 0.68 -> 0.62, 1x1 0.081 ->
// 0.083, late 7x7x512 0.59 -> 0.56: the gather, not the multiply, bounds both; cuDNN on
// bf16 tensors (half the bytes to gather) is 3-10x faster. Errors against float64 on unit-
// scale data: bf16 2.4e-3, fp16 2.9e-4 (TF32 2.9e-4), as cuDNN's 2.9e-3 and 3.6e-4.
// =======================================================================================
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v9_bf16_128x128(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<128, 128, 2, 4, 4, PREC_BF16>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v9_bf16_64x64(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<64, 64, 2, 2, 4, PREC_BF16>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v9_fp16_128x128(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<128, 128, 2, 4, 4, PREC_FP16>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v9_fp16_64x64(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits)
{
    tensor_core_conv<64, 64, 2, 2, 4, PREC_FP16>(x, w, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits);
}

// =======================================================================================
// v10 implicit GEMM on tensor cores, CHANNELS LAST = v8 with the input and the weights first
// copied to a layout in which the gather disappears. v8's main loop compiles (ptxas, sm_90) to
// ~1080 instructions around the 64 mma a warp issues per 32-deep stage: the gather (padding tests,
// carries of (c, ki, kj), 64-bit offsets, four 4-byte copies wherever a tap's run is not
// 16-byte aligned: two taps in three of a 3x3 layer) and 24 TF32 roundings per k-step; at 206
// registers one block of 8 warps runs per SM, so that work cannot hide behind the tensor cores.
// What changes:
//   1. k is ordered (ki, kj, c): channels innermost. A layer whose groups have a multiple of
//      PIPE_BK channels then gives every 32-deep stage ONE tap and 32 consecutive channels;
//   2. conv2d_v10_to_channels_last (below) copies x once to x_cl (N, Hp, Wp, C): channels
//      last, the padding cells written out (zeros or mirrored), every value rounded to TF32;
//      w goes the same way to w_cl (M, KH, KW, C/groups). In x_cl a stage's 32 values of k
//      for one pixel are 128 contiguous bytes, at base(pixel) + tap offset + c0: no padding
//      test, no division, and every copy is a 16-byte cp.async. The copy costs one more read
//      and write of x (a transposition through shared memory, coalesced both ways);
//   3. both operands sit in shared memory as [row][k] (k contiguous, pitch 36 floats), so the
//      inputs' B fragments come by ldmatrix too (one ldmatrix.x4: two 8-pixel mma tiles);
//   4. the operands are already TF32: the inner loop is ldmatrix and mma only;
//   5. 128 registers a thread instead of 206 (ptxas): TWO blocks of 8 warps per SM (128 x 128
//      tile), so one block's barrier wait can overlap the other's tensor-core work.
// Unchanged: 3 cp.async stages of 32 k, the warp tiles of v7, split K, the write-back.
// The host picks v10 for TF32 where C/groups is a multiple of PIPE_BK and the copies fit its
// limits, except 1x1 layers of stride 1 without padding (v8 copies those without a gather);
// v7 / v8 elsewhere. Its tile: 128 x 128 where a group has more than 32 filters.
// Measured (H100, bench.suite at 36ead58, two runs in one lease), ms, v8 -> v10 with its copies
// (cuDNN-TF32): VGG-like 0.663 / 0.648 -> 0.288 / 0.288 (0.205 / 0.213); 5x5 0.244 / 0.249 ->
// 0.117 / 0.119 (0.076 / 0.080); grouped g=4 0.561 / 0.562 -> 0.254 / 0.251 (0.176 / 0.173);
// late 14x14x256 0.267 / 0.266 -> 0.108 / 0.109 (0.058 / 0.061); 7x7x512 0.281 / 0.288 ->
// 0.116 / 0.124 (0.073 / 0.074); 7x7x1024 0.489 / 0.490 -> 0.210 / 0.212 (0.150 / 0.150);
// 1x1 0.078 / 0.074 -> 0.095 / 0.086 (so v8 stays there). Error against float64 2.9e-4, as
// cuDNN-TF32's. Nsight Compute, VGG-like GEMM alone: v8 655 us, 230 M instructions issued
// (~1020 a warp per stage), 8 warps per SM, 61% of cycles with no warp ready; v10 218 us, 51 M
// instructions, 16 warps per SM, L2 throughput at 74% of its peak: the L2, and the ~70 us of
// copies, are what is left to win (cuDNN's larger tiles read fewer L2 bytes per mma).
// =======================================================================================
#define CL_TILE 32    // conv2d_v10_to_channels_last: 32 channels of the copy per block ...
#define CL_CELLS 64   // ... x 64 consecutive cells (2 runs of 32 a thread's column)

// x (N, C, H, W) -> x_cl (N, Hp, Wp, C), rounded to TF32: x_cl row r, column s is input cell
// (r - pad_h, s - pad_w) with the padding rule applied. C % CL_TILE == 0 (the host checks).
// A block moves CL_TILE channels x CL_CELLS consecutive cells q = (n*Hp + r)*Wp + s of the copy
// (across rows and samples, so narrow images keep every thread busy) through shared memory:
// threads read along the cells (coalesced within a row of x) and write along the channels of
// x_cl (128 contiguous bytes a cell). x's blocks: grid x 0 .. ceil(N*Hp*Wp / CL_CELLS) - 1, grid
// y C / CL_TILE; block = (CL_TILE, 8): thread (tx, ty) reads cells tx, tx + 32, ... of channels
// ty, ty + 8, ... and writes channel tx of cells ty, ty + 8, ... The weights go through the same
// body in the same launch (copy_x_and_w, below): w (M, Cg, KH, KW) is a batch of M images of Cg
// channels, no padding (Hp = KH, Wp = KW).
// (A first version tiled one row at a time, 32 columns a block: on a 3x3 weight tensor 29 of
// every 32 threads idled. On the H100 the late 7x7x1024 layer then spent ~230 us of its 0.38 ms
// outside its GEMM (148 us in Nsight Compute), most of it copying the 1024 x 1024 x 3 x 3 weights.
// The second moved 32 cells a block, 4 loads a thread before its barrier: on the H100 the copies
// of the 5x5 layer's x (16 x 32 x 64 x 64, 8.4 MB read, 9.5 MB written) and w took 0.019 ms,
// about 1 TB/s, a third of the TF32 layer's 0.061 ms. Now 64 cells, 8 loads a thread in flight;
// H100, one lease, three rounds, copies of x and w in ms, 32 / 64 / 128 cells a block: VGG-like
// TF32 0.052 / 0.047 / 0.049, 3xTF32 (two parts) 0.076 / 0.068 / 0.070; resnet56 TF32 0.031 /
// 0.028 / 0.030; late 14x14x256 level (0.016-0.017). The whole layers 1-3% faster.)
// The body is shared by v10's, v11's and v13's copies: `write(o, v)` stores input value v (zero
// or mirrored in the padding) at offset o = cell * C + channel of the copy, rounded as that
// version's GEMM reads it.
template <typename Write>
__device__ __forceinline__ void copy_to_channels_last(const float* __restrict__ src, int N, int C, int H, int W,
                                                      int Hp, int Wp, int pad_h, int pad_w, int reflect,
                                                      long long block, Write write)
{
    constexpr int RUNS = CL_CELLS / 32, ROWS = CL_TILE / 8;   // a thread's cells and channels
    __shared__ float tile[CL_TILE][CL_CELLS + 1];     // [channel][cell], padded: no bank conflicts
    const long long cells = (long long)N * Hp * Wp;
    const long long q0 = block * CL_CELLS;            // block: this copy's x-th tile of cells
    const int c0 = blockIdx.y * CL_TILE;
    const int tx = threadIdx.x, ty = threadIdx.y;
    // my cells q0 + tx + 32j as (sample, row, column): one division, then 32 cells on at a time
    const long long nr = (q0 + tx) / Wp;
    int s = (int)(q0 + tx - nr * Wp), n = (int)(nr / Hp), r = (int)(nr - (long long)n * Hp);
    const float* planes[RUNS];                       // channel c0 + ty of the cell's sample
    int ih[RUNS], iw[RUNS];
#pragma unroll
    for (int j = 0; j < RUNS; ++j) {
        planes[j] = src + ((long long)n * C + c0 + ty) * ((long long)H * W);
        ih[j] = r - pad_h;
        iw[j] = s - pad_w;
        s += 32;
        while (s >= Wp) {                            // a narrow row: several rows on
            s -= Wp;
            if (++r == Hp) { r = 0; ++n; }
        }
    }
    // all the loads, then all the stores to shared memory: RUNS * ROWS loads in flight a thread
    float v[RUNS][ROWS];
#pragma unroll
    for (int j = 0; j < RUNS; ++j)
#pragma unroll
        for (int i = 0; i < ROWS; ++i)               // past the last cell: a value never stored
            v[j][i] = q0 + tx + 32 * j < cells
                ? load_padded(planes[j] + 8LL * i * H * W, ih[j], iw[j], H, W, reflect) : 0.0f;
#pragma unroll
    for (int j = 0; j < RUNS; ++j)
#pragma unroll
        for (int i = 0; i < ROWS; ++i) tile[ty + 8 * i][tx + 32 * j] = v[j][i];
    __syncthreads();
#pragma unroll
    for (int i = ty; i < CL_CELLS; i += 8) {
        if (q0 + i < cells) write((q0 + i) * C + c0 + tx, tile[tx][i]);
    }
}

// x and w in ONE launch: the GEMM needs both, and on the H100 a second launch of the copy added
// ~4 us to a call whatever its size (the 5x5 layer's 204 KB of weights: 0.054 -> 0.058 ms).
// Blocks 0 .. x_blocks - 1 move x as above; the others move w, a batch of M images of Cg
// channels without padding (Hp = KH, Wp = KW); grid y counts x's channel tiles, and w's blocks
// past its Cg channels return (C >= Cg). write(of_x, o, v) stores v at o of x_cl or of w_cl.
// (v17 copies w alone: x_blocks = 0, N = 0.)
template <typename Write>
__device__ __forceinline__ void copy_x_and_w(const float* __restrict__ x, const float* __restrict__ w,
                                             int N, int C, int H, int W, int Hp, int Wp, int pad_h, int pad_w,
                                             int reflect, int M, int Cg, int KH, int KW, int x_blocks, Write write)
{
    if (blockIdx.x < x_blocks)
        copy_to_channels_last(x, N, C, H, W, Hp, Wp, pad_h, pad_w, reflect, blockIdx.x,
                              [&](long long o, float v) { write(true, o, v); });
    else if (blockIdx.y * CL_TILE < Cg)
        copy_to_channels_last(w, M, Cg, KH, KW, KH, KW, 0, 0, 0, blockIdx.x - x_blocks,
                              [&](long long o, float v) { write(false, o, v); });
}

// The arrays come w first: a test build records the writers of the last one, x_cl (the copy's
// thread map is x's; w's stores are not recorded).
extern "C" __global__ void __launch_bounds__(256) conv2d_v10_to_channels_last(
    const float* __restrict__ w, float* __restrict__ w_cl, const float* __restrict__ x, float* __restrict__ x_cl,
    int N, int C, int H, int W, int Hp, int Wp, int pad_h, int pad_w, int reflect,   // x -> x_cl (N, Hp, Wp, C)
    int M, int Cg, int KH, int KW, int x_blocks)                                       // w -> w_cl (M, KH, KW, Cg)
{
#if __CUDA_ARCH__ >= 900
    // Hopper: a kernel launched as this launch's programmatic dependent (v17) may start now;
    // it waits for the whole copy before it reads w_cl. Any other next launch waits as usual.
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
    copy_x_and_w(x, w, N, C, H, W, Hp, Wp, pad_h, pad_w, reflect, M, Cg, KH, KW, x_blocks,
                 [&](bool of_x, long long o, float v) {
                     const float r = __uint_as_float(to_tf32(v));
                     if (of_x) store(x_cl, o, r);
                     else w_cl[o] = r;
                 });
}

// What a channels-last copy holds (v10: TF32 values in floats; v11: bf16 / fp16 bits).
template <int PREC> struct CopyValue { using type = unsigned short; };
template <> struct CopyValue<PREC_TF32> { using type = float; };

// Where the channels-last GEMMs (v10, v11, and v12 in conv2d_hopper.cu) read. Filter mm's row of
// w_cl (M, KH, KW, Cg), at k = 0:
template <typename V>
__device__ __forceinline__ const V* filter_row(const V* w_cl, int mm, int Kp) {
    return w_cl + (long long)mm * Kp;
}
// Batch pixel
// p = n*L + oh*W_out + ow reads, at tap (0, 0), the x_cl cell (oh*stride_h, ow*stride_w) of
// sample n; its group's channels start at g*Cg.
template <typename V>
__device__ __forceinline__ const V* pixel_cell(const V* x_cl, int p, int L, int W_out, int Hp, int Wp, int C,
                                               int first_channel, int stride_h, int stride_w) {
    const int n = p / L, l = p % L, oh = l / W_out, ow = l % W_out;
    return x_cl + (((long long)n * Hp + oh * stride_h) * Wp + ow * stride_w) * C + first_channel;
}

// The walk through k = (ki*KW + kj)*Cg + c one stage of KC channels at a time: `k` is the stage's
// offset along a weight row of w_cl; `x()` its offset in x_cl from a pixel's tap-(0, 0) cell (the
// tap's rows and columns, dilation included, then the stage's first channel). Cg % KC == 0.
struct StageWalk {
    int k, c0, ki, kj, tap;
    const int Cg, KW, KC, row_step, col_step;      // x_cl offsets of one tap row / column
    __device__ __forceinline__ StageWalk(int first_k, int Cg_, int KW_, int KC_, int dil_h, int dil_w, int Wp, int C)
        : k(first_k), c0(first_k % Cg_), ki((first_k / Cg_) / KW_), kj((first_k / Cg_) % KW_), tap(0),
          Cg(Cg_), KW(KW_), KC(KC_), row_step(dil_h * Wp * C), col_step(dil_w * C) {
        tap = ki * row_step + kj * col_step;       // < one sample of x_cl < 2^31: the host checks
    }
    __device__ __forceinline__ int x() const { return tap + c0; }
    __device__ __forceinline__ void next() {     // the next KC channels; past the last, the next tap
        k += KC;
        c0 += KC;
        if (c0 == Cg) {
            c0 = 0;
            if (++kj == KW) { kj = 0; ++ki; tap = ki * row_step; } else tap += col_step;
        }
    }
};

// The GEMM of v10 (PREC_TF32, KC = PIPE_BK) and v11 (16-bit operands, KC = 32 or 64): a stage is
// one tap and KC channels. Shared memory is counted in 32-bit words either way: a stage row is
// KC values of ROW_WORDS words, and one mma k-step reads 8 words of it (8 TF32 values for
// m16n8k8, 16 halves for m16n8k16), so the copies, ldmatrix addresses and k loop are the same.
template <int BM, int BN, int WARPS_M, int WARPS_N, int PREC, int KC>
__device__ __forceinline__ void channels_last_conv(
    const typename CopyValue<PREC>::type* __restrict__ x_cl, const typename CopyValue<PREC>::type* __restrict__ w_cl,
    const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    constexpr int THREADS = 32 * WARPS_M * WARPS_N;
    constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;      // one warp's outputs
    constexpr int MT = WM / 16, NT = WN / 8;                 // its mma tiles
    constexpr int BYTES = sizeof(typename CopyValue<PREC>::type);
    constexpr int ROW_WORDS = KC * BYTES / 4;                // words of one stage row (k values)
    constexpr int PITCH = ROW_WORDS + 4;                     // words a shared row: ldmatrix conflict-free
    constexpr int CHUNKS = ROW_WORDS / 4;                    // 16-byte copies per row of a stage
    constexpr int PER_CHUNK = 16 / BYTES;                    // values of k one 16-byte copy moves
    constexpr int ROWS = THREADS / CHUNKS;                   // rows one pass of the block copies
    static_assert(BM % ROWS == 0 && BN % ROWS == 0 && NT % 2 == 0 && ROW_WORDS % 8 == 0, "copy layout");

    extern __shared__ __align__(16) float tc_smem[];
    float (*As)[BM][PITCH] = reinterpret_cast<float (*)[BM][PITCH]>(tc_smem);                 // [stage][m][k]
    float (*Bs)[BN][PITCH] = reinterpret_cast<float (*)[BN][PITCH]>(tc_smem + PIPE_STAGES * BM * PITCH);  // [stage][p][k]

    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int Cg = C / groups, Mg = M / groups;
    const int L = H_out * W_out, P = N * L;          // P < 2^31: the host checks
    const int Kp = KH * KW * Cg;                     // k = (ki*KW + kj)*Cg + c
    const int g = blockIdx.y / m_blocks;
    const int m0 = (blockIdx.y % m_blocks) * BM;     // first filter of the block, within the group
    const int p0 = blockIdx.x * BN;                  // first pixel of the block
    const int all_tiles = Kp / KC;                   // Cg % KC == 0: the host checks
    const int per_split = (all_tiles + k_splits - 1) / k_splits;
    const int tile0 = blockIdx.z * per_split;
    const int tiles = min(all_tiles - tile0, per_split);

    // ---- the copies: thread t moves 16 bytes (words chunk..chunk+3 of a stage row: k values
    // k_chunk.. k_chunk + PER_CHUNK - 1) of rows t / CHUNKS + i * ROWS of both operands.
    // Where each row starts, computed once:
    const int chunk = (t % CHUNKS) * 4, k_chunk = (t % CHUNKS) * PER_CHUNK, row = t / CHUNKS;
    using V = typename CopyValue<PREC>::type;
    const V* a_src[BM / ROWS];                       // weight rows (filters); none past Mg
    bool a_ok[BM / ROWS];
#pragma unroll
    for (int i = 0; i < BM / ROWS; ++i) {
        const int m = m0 + row + i * ROWS;
        a_ok[i] = m < Mg;
        a_src[i] = filter_row(w_cl, g * Mg + (a_ok[i] ? m : 0), Kp) + k_chunk;
    }
    const V* b_src[BN / ROWS];                       // x_cl cell of tap (0, 0) of each pixel
    bool b_ok[BN / ROWS];
#pragma unroll
    for (int i = 0; i < BN / ROWS; ++i) {
        const int p = p0 + row + i * ROWS;
        b_ok[i] = p < P;
        b_src[i] = pixel_cell(x_cl, b_ok[i] ? p : 0, L, W_out, Hp, Wp, C, g * Cg, stride_h, stride_w) + k_chunk;
    }
    StageWalk next(tile0 * KC, Cg, KW, KC, dil_h, dil_w, Wp, C);   // the next stage to load

    auto load_stage = [&](int s) {
#pragma unroll
        for (int i = 0; i < BM / ROWS; ++i)
            cp_async16(&As[s][row + i * ROWS][chunk], reinterpret_cast<const float*>(a_src[i] + next.k), a_ok[i]);
#pragma unroll
        for (int i = 0; i < BN / ROWS; ++i)
            cp_async16(&Bs[s][row + i * ROWS][chunk], reinterpret_cast<const float*>(b_src[i] + next.x()), b_ok[i]);
        asm volatile("cp.async.commit_group;\n" ::);
        next.next();
    };

    // ---- what this warp computes: filters wm.. (WM of them), pixels wn.. (WN) of the tile ----
    const int wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
    // lane l points ldmatrix at row l % 8 of matrix l / 8. Weights: matrices (filters 0-7, words 0-3),
    // (8-15, 0-3), (0-7, 4-7), (8-15, 4-7) = a0..a3 of m16n8k8. Inputs: (pixels 0-7, words 0-3),
    // (0-7, 4-7), (8-15, 0-3), (8-15, 4-7) = b0, b1 of one 8-pixel tile, then of the next.
    // v11: 4 words are 8 halves, and the same four matrices are a0..a3 and b0, b1 of m16n8k16
    // (lane 4g + t receives row g, halves 2t and 2t + 1, the lower k in the lower half)
    const int ld_row = (lane & 7) + ((lane >> 3) & 1) * 8, ld_k = (lane >> 4) * 4;
    const int lb_row = (lane & 7) + (lane >> 4) * 8, lb_k = ((lane >> 3) & 1) * 4;
    float acc[MT][NT][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
        for (int j = 0; j < NT; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;

#pragma unroll
    for (int s = 0; s < PIPE_STAGES - 1; ++s) {      // the pipeline fills
        if (s < tiles) load_stage(s);
        else asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int tile = 0; tile < tiles; ++tile) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(PIPE_STAGES - 2));
        __syncthreads();                             // stage `tile` landed; stage tile - 1 is free
        if (tile + PIPE_STAGES - 1 < tiles) load_stage((tile + PIPE_STAGES - 1) % PIPE_STAGES);
        else asm volatile("cp.async.commit_group;\n" ::);
        const int s = tile % PIPE_STAGES;
#pragma unroll
        for (int kk = 0; kk < ROW_WORDS; kk += 8) {  // one mma k-step: 8 words of each row
            unsigned a[MT][4], b[NT][2];
#pragma unroll
            for (int i = 0; i < MT; ++i) ldmatrix_x4(a[i], &As[s][wm + i * 16 + ld_row][kk + ld_k]);
#pragma unroll
            for (int j = 0; j < NT; j += 2)          // b0, b1 of pixel tiles j and j + 1
                ldmatrix_x4(&b[j][0], &Bs[s][wn + j * 8 + lb_row][kk + lb_k]);
#pragma unroll
            for (int i = 0; i < MT; ++i)
#pragma unroll
                for (int j = 0; j < NT; ++j) {
                    if constexpr (PREC == PREC_TF32) mma_tf32(acc[i][j], a[i], b[j]);
                    else mma_16bit<PREC>(acc[i][j], a[i], b[j]);
                }
        }
    }
    store_warp_tile<MT, NT>(acc, y, bias, M, Mg, g, L, P, m0 + wm, p0 + wn, k_splits);
}

// The kernels of v10 (TF32): x_cl and w_cl come from conv2d_v10_to_channels_last. Large tile:
// 128 filters x 128 pixels, 8 warps of 64 x 32, two blocks per SM; small tile: 64 x 64, 4 warps
// of 32 x 32, four blocks per SM.
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v10_tf32_128x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    channels_last_conv<128, 128, 2, 4, PREC_TF32, PIPE_BK>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v10_tf32_64x64(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    channels_last_conv<64, 64, 2, 2, PREC_TF32, PIPE_BK>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h,
        stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}

// =======================================================================================
// v11 implicit GEMM on tensor cores, 16-BIT CHANNELS-LAST COPIES = v10 with bf16 or fp16
// operands (v9's m16n8k16, fp32 sums). v9 kept v8's gather and reached ~49 TFLOP/s on the
// VGG-like layer (0.60 ms, H100), slower than v10 in TF32 (0.29 ms), although the tensor cores
// multiply 16-bit operands at twice TF32's rate. What changes from v10:
//   1. conv2d_v11_to_channels_last (below) rounds while it copies: x_cl and w_cl hold bf16 /
//      fp16 bits (cvt.rn: to nearest even, as PyTorch's .to(bfloat16 / float16)), half the
//      bytes of v10's TF32 copies, rounded once instead of in the inner loop (v9 rounds every
//      fragment it reads);
//   2. a 16-byte cp.async moves 8 values of k instead of 4, and one 8-word k-step of a stage row
//      is 16 halves: one m16n8k16 per tile pair instead of v10's m16n8k8, at twice the rate.
//      ldmatrix needs no change: its 8 x 8 matrices of 16-bit values are a0..a3 and b0, b1 of
//      m16n8k16 directly (v10 reads them as 8 x 4 blocks of floats);
//   3. a stage is one tap and KC channels: KC = 64 where the group's channels are a multiple of
//      64 (a stage row is then 128 bytes, as in v10: the same copies, pitch and barriers per
//      stage, with twice v10's k per stage, so half the barriers per k), else KC = 32 (64-byte
//      rows, pitch 20 words: ldmatrix still conflict-free), so v11 runs on every layer where v10
//      runs (C/groups a multiple of 32; the host picks v9 elsewhere, and on 1x1 layers of
//      stride 1 without padding as it picks v8 over v10).
// Unchanged: 3 cp.async stages, the tiles and warp tiles of v10, split K, the write-back.
// Predicted: the VGG-like layer at least 1.5x faster than v9 and faster than v10 (the GEMM's
// bytes through L2 and its tensor-core time both halve). Measured (H100, bench.suite at
// 075e688, two runs in one lease; run 2 is bench/results/h100_tensor_cores.json), ms, bf16
// v9 -> v11 with its copies (TF32 v10; cuDNN on bf16 tensors): VGG-like 0.598 / 0.596 -> 0.196 / 0.194, 3.1x
// (0.300 / 0.295; 0.145 / 0.125); 5x5 (32 channels: stages of 32) 0.245 / 0.229 -> 0.109 /
// 0.090 (0.143 / 0.119; 0.071 / 0.055); grouped g=4 0.547 / 0.524 -> 0.209 / 0.195 (0.266 /
// 0.249; 0.121 / 0.111); late 14x14x256 0.263 / 0.258 -> 0.095 / 0.094 (0.130 / 0.126; 0.062 /
// 0.064); 7x7x512 0.284 / 0.267 -> 0.098 / 0.089 (0.137 / 0.120; 0.076 / 0.055); 7x7x1024
// 0.474 / 0.456 -> 0.177 / 0.158 (0.232 / 0.212; 0.133 / 0.116); fp16 the same within 4%. The
// prediction held: 2.2-3.1x v9, 1.3-1.5x faster than v10, still 1.3-1.8x cuDNN. On the 1x1
// layer v9 stays faster (0.075 / 0.073 against 0.081 / 0.078): the host keeps v9 there.
// Stages of 64 against 32 channels (H100, one run, VGG-like): bf16 0.196 against 0.216 ms,
// fp16 0.185 against 0.206. Errors against float64 as v9's: bf16 2.4e-3, fp16 2.9e-4.
// =======================================================================================
// x -> x_cl (N, Hp, Wp, C) and w -> w_cl (M, KH, KW, Cg) of 16-bit values (prec: PREC_BF16 or
// PREC_FP16), as conv2d_v10_to_channels_last does with TF32 floats; same grid, block and map.
extern "C" __global__ void __launch_bounds__(256) conv2d_v11_to_channels_last(
    const float* __restrict__ w, unsigned short* __restrict__ w_cl, const float* __restrict__ x,
    unsigned short* __restrict__ x_cl, int N, int C, int H, int W, int Hp, int Wp, int pad_h, int pad_w, int reflect,
    int M, int Cg, int KH, int KW, int x_blocks, int prec)
{
    copy_x_and_w(x, w, N, C, H, W, Hp, Wp, pad_h, pad_w, reflect, M, Cg, KH, KW, x_blocks,
                 [&](bool of_x, long long o, float v) {
                     const auto h = (unsigned short)(pack_half2(v, 0.0f, prec) & 0xFFFFu);   // the lower half
                     if (of_x) {
                         x_cl[o] = h;
                         trace_store(o);
                     } else {
                         w_cl[o] = h;
                     }
                 });
}

// The kernels of v11: x_cl and w_cl come from conv2d_v11_to_channels_last. Tiles as v10's;
// _c64: stages of 64 channels (C/groups a multiple of 64), _c32: of 32.
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v11_bf16_128x128_c64(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<128, 128, 2, 4, PREC_BF16, 64>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v11_bf16_64x64_c64(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<64, 64, 2, 2, PREC_BF16, 64>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v11_bf16_128x128_c32(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<128, 128, 2, 4, PREC_BF16, 32>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v11_bf16_64x64_c32(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<64, 64, 2, 2, PREC_BF16, 32>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v11_fp16_128x128_c64(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<128, 128, 2, 4, PREC_FP16, 64>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v11_fp16_64x64_c64(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<64, 64, 2, 2, PREC_FP16, 64>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v11_fp16_128x128_c32(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<128, 128, 2, 4, PREC_FP16, 32>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v11_fp16_64x64_c32(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias,
    float* __restrict__ y, int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h,
    int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits,
    int Hp, int Wp)
{
    channels_last_conv<64, 64, 2, 2, PREC_FP16, 32>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}

// =======================================================================================
// v15 depthwise rows = v6 WITHOUT SHARED MEMORY: a thread computes DW_ROWS outputs of one
// column and reads each input row they need ONCE, into registers (a sliding window).
// v6 stages a tile in shared memory, then computes from it: a thread's tile loads wait on
// global memory one after the other (a divide per cell, one load in flight), and the
// multiply-adds wait for the barrier. On a 32 x 256 x 56 x 56 depthwise layer it took 0.25 ms
// (H100), where its 206 MB take 0.07 at copy speed; at stride 2 it took twice cuDNN's time.
// Here the kernel size K and the stride S are constants of the compiled kernel (one kernel
// per (K, S) below; the host runs v6 on other layers), and:
//   - thread t of the grid takes output column ow = t % W_out and the DW_ROWS rows
//     oh0 = strip*DW_ROWS .. oh0 + DW_ROWS - 1 of plane (n, m): consecutive threads take
//     consecutive columns, so a warp's loads of an input row are neighbouring words;
//   - it walks the (DW_ROWS - 1)*S + K input rows of its strip once: row i
//     (ih = oh0*S - pad_h + i) gives K values (iw = ow*S - pad_w + kj) to registers, which
//     it adds, times the row's taps, into every output row that reads it: output row o reads
//     input row i through tap ki when i = o*S + ki;
//   - K, S and DW_ROWS are constants, so every loop unrolls: all the strip's loads are
//     independent instructions in flight together, and acc[] and the weights stay in registers;
//   - no shared memory, no barrier: threads that read the same rows share them through L1.
// A thread loads ((DW_ROWS - 1)*S + K)*K values for DW_ROWS*K*K multiply-adds (30 for 72 at
// K = 3, S = 1). grid = (ceil(N*M*strips*W_out / DW_ROWS_THREADS)), block = DW_ROWS_THREADS.
// Measured (H100, bench.suite, ms; v6 from a run an hour before, cuDNN fp32 from the same
// run): 32 x 256 x 56 x 56 0.093 (v6 0.247, cuDNN 0.238); stride 2, 32 x 128 x 112 x 112
// 0.100 (0.268, 0.137); 32 x 512 x 14 x 14 0.016 (0.082, 0.031); one 4096 x 4096 greyscale image
// 0.064 (0.139, 0.144). A prototype's rows a thread at stride 1 (3x3, 56 x 56): 2 / 4 / 8 rows
// 0.176 / 0.123 / 0.097 ms; at stride 2: 2 / 4 / 8 rows 0.104 / 0.093 / 0.100.
// =======================================================================================
#define DW_ROWS_THREADS 256

template <int K, int S, int DW_ROWS>
__device__ __forceinline__ void depthwise_rows(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int H_out, int W_out, int pad_h, int pad_w, int groups, int reflect,
    int strips)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int ow = (int)(t % W_out);
    const long long rest = t / W_out;
    const int strip = (int)(rest % strips);
    const long long plane = rest / strips;               // n*M + m
    if (plane >= (long long)N * M) return;
    const int m = (int)(plane % M), n = (int)(plane / M);
    const int g = m / (M / groups);                      // C/groups == 1: group g reads channel g
    const float* __restrict__ x_c = x + ((long long)n * C + g) * ((long long)H * W);
    float wt[K * K];
#pragma unroll
    for (int i = 0; i < K * K; ++i) wt[i] = w[(long long)m * K * K + i];
    const int oh0 = strip * DW_ROWS;
    float acc[DW_ROWS];
#pragma unroll
    for (int o = 0; o < DW_ROWS; ++o) acc[o] = bias ? bias[m] : 0.0f;
#pragma unroll
    for (int i = 0; i < (DW_ROWS - 1) * S + K; ++i) {
        const int ih = input_coord(oh0, S, pad_h, i, 1);  // the strip's input row i
        float v[K];
#pragma unroll
        for (int kj = 0; kj < K; ++kj) v[kj] = load_padded(x_c, ih, input_coord(ow, S, pad_w, kj, 1), H, W, reflect);
#pragma unroll
        for (int ki = 0; ki < K; ++ki) {                 // output row o = (i - ki) / S, where exact
            if (i < ki || (i - ki) % S != 0 || (i - ki) / S >= DW_ROWS) continue;   // decided when compiled
#pragma unroll
            for (int kj = 0; kj < K; ++kj) acc[(i - ki) / S] += v[kj] * wt[ki * K + kj];
        }
    }
    const long long first = (plane * H_out + oh0) * W_out + ow;   // y[n, m, oh0, ow]
#pragma unroll
    for (int o = 0; o < DW_ROWS; ++o)
        if (oh0 + o < H_out) store(y, first + (long long)o * W_out, acc[o]);
}

// The kernels of v15: 3x3 and 5x5 windows, stride 1 (8 rows a thread) and 2 (4 rows: a
// thread's input rows, 2 per output row, stay as many as at stride 1). One kernel per body, not
// one kernel choosing among the four: that one runs with the registers of its largest body, and
// its stride-2 3x3 layer took 0.152 ms where this one takes 0.100 (H100, cuDNN 0.137).
extern "C" __global__ void __launch_bounds__(DW_ROWS_THREADS) conv2d_v15_depthwise_k3s1(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int strips)
{
    depthwise_rows<3, 1, 8>(x, w, bias, y, N, C, M, H, W, H_out, W_out, pad_h, pad_w, groups, reflect, strips);
}
extern "C" __global__ void __launch_bounds__(DW_ROWS_THREADS) conv2d_v15_depthwise_k3s2(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int strips)
{
    depthwise_rows<3, 2, 4>(x, w, bias, y, N, C, M, H, W, H_out, W_out, pad_h, pad_w, groups, reflect, strips);
}
extern "C" __global__ void __launch_bounds__(DW_ROWS_THREADS) conv2d_v15_depthwise_k5s1(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int strips)
{
    depthwise_rows<5, 1, 8>(x, w, bias, y, N, C, M, H, W, H_out, W_out, pad_h, pad_w, groups, reflect, strips);
}
extern "C" __global__ void __launch_bounds__(DW_ROWS_THREADS) conv2d_v15_depthwise_k5s2(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int strips)
{
    depthwise_rows<5, 2, 4>(x, w, bias, y, N, C, M, H, W, H_out, W_out, pad_h, pad_w, groups, reflect, strips);
}
