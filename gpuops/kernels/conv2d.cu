// 2-D convolution (PyTorch F.conv2d semantics: cross-correlation, stride, padding, dilation,
// groups, bias; zero or reflect padding).
//
// Shapes: x (N, C, H, W), w (M, C/groups, KH, KW), y (N, M, H_out, W_out).
// Output (n, m, oh, ow) reads input cell
//   ih = oh*stride_h - pad_h + ki*dil_h,   iw = ow*stride_w - pad_w + kj*dil_w
// of every channel c of filter m's group, g = m / (M/groups).
#include "index_math.cuh"

#define CONV_ARGS int N, int C, int H, int W, int M, int KH, int KW, int H_out, int W_out, \
                  int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w, \
                  int groups, int reflect, int tiles_w

// Fetch input cell (ih, iw) of one channel plane, applying the padding rule:
// zeros outside the image, or the reflected cell (PyTorch padding_mode="reflect").
__device__ __forceinline__ float load_padded(const float* __restrict__ plane, int ih, int iw,
                                             int H, int W, int reflect) {
    if (reflect) {
        ih = reflect_index(ih, H);
        iw = reflect_index(iw, W);
    }
    // With reflect, a cell can still be out of range here: only for halo cells that feed
    // outputs beyond the edge of the output, which are never written.
    if (ih < 0 || ih >= H || iw < 0 || iw >= W) return 0.0f;
    return plane[ih * W + iw];
}

// ---------------------------------------------------------------------------------------
// Direct convolution: ONE THREAD PER OUTPUT ELEMENT.
// grid  = (tiles_h * tiles_w, M, N): blockIdx.x is the linearised output tile
//         (as in PMPP fig. 16.12), blockIdx.y the filter m, blockIdx.z the sample n.
// block = (TILE_W, TILE_H): threadIdx is the pixel inside the tile.
// Every thread reads its whole receptive field from global memory: simple, but each input
// cell is fetched KH*KW*M times (the caches absorb part of it).
// ---------------------------------------------------------------------------------------
extern "C" __global__ void conv2d_direct(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, CONV_ARGS)
{
    const int n = blockIdx.z;
    const int m = blockIdx.y;
    const int oh = (blockIdx.x / tiles_w) * blockDim.y + threadIdx.y;
    const int ow = (blockIdx.x % tiles_w) * blockDim.x + threadIdx.x;
    if (oh >= H_out || ow >= W_out) return;   // tiles on the right/bottom edge overhang

    const int Cg = C / groups;                 // input channels seen by one filter
    const int g = m / (M / groups);            // this filter's group
    float acc = bias ? bias[m] : 0.0f;
    for (int c = 0; c < Cg; ++c) {
        const float* plane = x + ((long long)n * C + g * Cg + c) * H * W;
        const float* filt = w + ((long long)m * Cg + c) * KH * KW;
        for (int ki = 0; ki < KH; ++ki) {
            const int ih = oh * stride_h - pad_h + ki * dil_h;
            for (int kj = 0; kj < KW; ++kj) {
                const int iw = ow * stride_w - pad_w + kj * dil_w;
                acc += load_padded(plane, ih, iw, H, W, reflect) * filt[ki * KW + kj];
            }
        }
    }
    y[(((long long)n * M + m) * H_out + oh) * W_out + ow] = acc;
}

// ---------------------------------------------------------------------------------------
// Tiled convolution with shared memory and register blocking.
// One block computes an output tile of TILE_H x (TILE_W * PIXELS_PER_THREAD) pixels for
// FILTERS_PER_BLOCK filters of one group.
// grid  = (tiles_h * tiles_w, groups * m_blocks, N), block = (TILE_W, TILE_H).
// Thread (tx, ty) owns the PIXELS_PER_THREAD pixels (ty, tx + p*TILE_W) of the tile: they are
// TILE_W apart, so neighbouring threads always read neighbouring shared-memory words.
// For each slab of `cb` input channels the block
//   1. copies the input tile plus its halo into shared memory: the tile needs
//        in_h = (tile_h-1)*stride_h + (KH-1)*dil_h + 1 rows (in_w likewise),
//      applying the padding rule while loading, so the inner loop has no bounds checks.
//      Rows are stored `pitch` floats apart (pitch >= in_w): a warp spans two thread rows,
//      and with pitch = 16 (mod 32) those two rows fall in different shared-memory banks;
//   2. copies those channels' weights of its filters into shared memory, laid out
//      [c][ki][kj][filter] so the 8 weights of one tap are 32 contiguous bytes;
//   3. accumulates PIXELS_PER_THREAD x FILTERS_PER_BLOCK outputs per thread in registers.
//      Per tap a thread issues 2 float4 loads (8 weights) and PIXELS_PER_THREAD input loads
//      for 8*PIXELS_PER_THREAD fused multiply-adds: shared-memory traffic, not arithmetic,
//      is what limited the simple version (one weight load per multiply-add).
// ---------------------------------------------------------------------------------------
#define FILTERS_PER_BLOCK 8
#define PIXELS_PER_THREAD 2

extern "C" __global__ void __launch_bounds__(256) conv2d_tiled(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, CONV_ARGS, int m_blocks, int cb_max, int in_h, int in_w, int pitch)
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
    const int ih0 = tile_oh * stride_h - pad_h;      // input row of shared-memory row 0
    const int iw0 = tile_ow * stride_w - pad_w;
    const int oh = tile_oh + threadIdx.y;

    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;
    const int KK = KH * KW;

    float acc[PIXELS_PER_THREAD][FILTERS_PER_BLOCK];
#pragma unroll
    for (int f = 0; f < FILTERS_PER_BLOCK; ++f) {
        const float b = (bias && m0 + f < m_end) ? bias[m0 + f] : 0.0f;
#pragma unroll
        for (int p = 0; p < PIXELS_PER_THREAD; ++p) acc[p][f] = b;
    }

    for (int c0 = 0; c0 < Cg; c0 += cb_max) {
        const int cb = min(cb_max, Cg - c0);
        // 1. input tile + halo: consecutive threads load consecutive columns (coalesced).
        const float* x_slab = x + ((long long)n * C + g * Cg + c0) * H * W;
        for (int i = tid; i < cb * in_h * in_w; i += nthreads) {
            const int c = i / (in_h * in_w);
            const int r = i - c * (in_h * in_w);
            const int rr = r / in_w, cc = r - rr * in_w;
            s_in[(c * in_h + rr) * pitch + cc] = load_padded(x_slab + (long long)c * H * W, ih0 + rr, iw0 + cc, H, W, reflect);
        }
        // 2. weights, transposed to [c][ki][kj][f] (zeros past m_end).
        for (int i = tid; i < FILTERS_PER_BLOCK * cb * KK; i += nthreads) {
            const int f = i % FILTERS_PER_BLOCK;
            const int r = i / FILTERS_PER_BLOCK;     // c * KK + ki * KW + kj
            s_w[i] = (m0 + f < m_end) ? w[((long long)(m0 + f) * Cg + c0) * KK + r] : 0.0f;
        }
        __syncthreads();
        // 3. accumulate. The shared row of output (oh, ow) for tap (ki, kj) is
        //    (oh - tile_oh)*stride_h + ki*dil_h, its column (ow - tile_ow)*stride_w + kj*dil_w.
        for (int c = 0; c < cb; ++c) {
            for (int ki = 0; ki < KH; ++ki) {
                const float* s_row = s_in + (c * in_h + threadIdx.y * stride_h + ki * dil_h) * pitch
                                     + threadIdx.x * stride_w;
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
                    y[(((long long)n * M + m0 + f) * H_out + oh) * W_out + ow] = acc[p][f];
        }
    }
}

// ---------------------------------------------------------------------------------------
// Implicit GEMM: im2col's matrix product WITHOUT writing X_unroll (what cuDNN does).
// Per group, the convolution is the product
//   Y[m][p] = sum_k  W[m][k] * X_unroll[k][p]
// with k = (c, ki, kj) flattened (c*KH*KW + ki*KW + kj, the order of w's rows) and
// p = n*L + oh*W_out + ow a pixel of ANY sample (L = H_out*W_out): the batch is one long row
// of pixels, so small images and big batches both fill the GPU.
// X_unroll[k][p] is input cell (c, oh*stride_h - pad_h + ki*dil_h, ow*stride_w - pad_w +
// kj*dil_w) of sample n: the block gathers it from x while it loads its tile, so the K*K-times
// larger matrix is never stored.
//
// Tiling (a classic register-blocked SGEMM):
//   block tile  = IG_BM filters x IG_BN pixels, stepping through k IG_BK at a time;
//   thread tile = 8 filters x 8 pixels = 64 accumulators in registers. Per k a thread reads
//   8 weights and 8 inputs from shared memory (four float4 loads) for 64 multiply-adds.
//   The 8 filters are two groups of 4, IG_BM/2 apart (pixels likewise, IG_BN/2 apart), so the
//   float4 reads of neighbouring threads are neighbouring words: no bank conflicts.
//   Double buffering: while the block multiplies tile t from shared memory, each thread's
//   loads of tile t+1 are already in flight into registers (one __syncthreads per tile).
// grid = (ceil(N*L / IG_BN), groups * m_blocks), block = IG_THREADS threads.
// ---------------------------------------------------------------------------------------
#define IG_BM 64                                    // filters per block
#define IG_BN 128                                   // pixels per block
#define IG_BK 8                                     // k values per step
#define IG_THREADS ((IG_BM / 8) * (IG_BN / 8))      // == IG_BN: each thread owns 8 x 8 outputs
#define IG_A_STEP (IG_THREADS / IG_BM)              // k columns between a thread's weight loads

extern "C" __global__ void __launch_bounds__(IG_THREADS) conv2d_implicit_gemm(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, CONV_ARGS, int m_blocks)
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
    // Its top-left input cell (ih0, iw0) and sample base are computed once, here.
    const int b_p = p0 + t;
    const bool b_ok = b_p < P;
    int ih0 = 0, iw0 = 0;
    const float* __restrict__ x_n = x;
    if (b_ok) {
        const int n = b_p / L, l = b_p % L;
        ih0 = (l / W_out) * stride_h - pad_h;
        iw0 = (l % W_out) * stride_w - pad_w;
        x_n = x + ((long long)n * C + (long long)g * Cg) * H * W;
    }
    // The next k this thread gathers, split into (kc, ki, kj), as row / column offsets
    // (k_ih = ki*dil_h, k_iw = kj*dil_w) and as a flat offset in x_n. Every thread walks
    // k = 0, 1, 2, ... in order, so these are carried along: no division in the loop.
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
                    v = x_n[(long long)kc * H * W + reflect_index(ih, H) * W + reflect_index(iw, W)];
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
            y[((long long)n * M + mm) * L + l] = acc[i][j] + (bias ? bias[mm] : 0.0f);
        }
    }
}
