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
// One block computes a TILE_H x TILE_W output tile for FILTERS_PER_BLOCK filters of one group.
// grid  = (tiles_h * tiles_w, groups * m_blocks, N), block = (TILE_W, TILE_H).
// For each slab of `cb` input channels the block
//   1. copies the input tile plus its halo into shared memory: the tile needs
//        in_h = (TILE_H-1)*stride_h + (KH-1)*dil_h + 1 rows (in_w likewise),
//      applying the padding rule while loading, so the inner loop has no bounds checks;
//   2. copies those channels' weights of its filters into shared memory;
//   3. every thread accumulates FILTERS_PER_BLOCK outputs in registers: each input value
//      read from shared memory is reused FILTERS_PER_BLOCK times.
// Global traffic per input cell drops from KH*KW*M reads (direct) to about
// (in_h*in_w)/(TILE_H*TILE_W) * M/FILTERS_PER_BLOCK.
// ---------------------------------------------------------------------------------------
#define FILTERS_PER_BLOCK 8

extern "C" __global__ void conv2d_tiled(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias,
    float* __restrict__ y, CONV_ARGS, int m_blocks, int cb_max, int in_h, int in_w)
{
    extern __shared__ float smem[];
    float* s_in = smem;                              // [cb_max][in_h][in_w]
    float* s_w = smem + cb_max * in_h * in_w;        // [FILTERS_PER_BLOCK][cb_max][KH][KW]

    const int n = blockIdx.z;
    const int Mg = M / groups, Cg = C / groups;
    const int g = blockIdx.y / m_blocks;             // group of this block's filters
    const int m0 = g * Mg + (blockIdx.y % m_blocks) * FILTERS_PER_BLOCK;
    const int m_end = min(m0 + FILTERS_PER_BLOCK, (g + 1) * Mg);

    const int tile_oh = (blockIdx.x / tiles_w) * blockDim.y;  // first output row of the tile
    const int tile_ow = (blockIdx.x % tiles_w) * blockDim.x;
    const int ih0 = tile_oh * stride_h - pad_h;      // input row of shared-memory row 0
    const int iw0 = tile_ow * stride_w - pad_w;
    const int oh = tile_oh + threadIdx.y, ow = tile_ow + threadIdx.x;
    const bool active = oh < H_out && ow < W_out;

    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nthreads = blockDim.x * blockDim.y;
    const int KK = KH * KW;

    float acc[FILTERS_PER_BLOCK];
#pragma unroll
    for (int f = 0; f < FILTERS_PER_BLOCK; ++f)
        acc[f] = (bias && m0 + f < m_end) ? bias[m0 + f] : 0.0f;

    for (int c0 = 0; c0 < Cg; c0 += cb_max) {
        const int cb = min(cb_max, Cg - c0);
        // 1. input tile + halo: consecutive threads load consecutive columns (coalesced).
        for (int i = tid; i < cb * in_h * in_w; i += nthreads) {
            const int c = i / (in_h * in_w);
            const int r = i % (in_h * in_w);
            const float* plane = x + ((long long)n * C + g * Cg + c0 + c) * H * W;
            s_in[i] = load_padded(plane, ih0 + r / in_w, iw0 + r % in_w, H, W, reflect);
        }
        // 2. weights of filters m0..m_end-1 for channels c0..c0+cb-1 (zeros past m_end).
        for (int i = tid; i < FILTERS_PER_BLOCK * cb * KK; i += nthreads) {
            const int f = i / (cb * KK);
            const int r = i % (cb * KK);             // c * KK + ki * KW + kj
            s_w[i] = (m0 + f < m_end) ? w[((long long)(m0 + f) * Cg + c0) * KK + r] : 0.0f;
        }
        __syncthreads();
        // 3. accumulate; shared row of output (oh, ow) tap (ki, kj) is
        //    (oh - tile_oh)*stride_h + ki*dil_h  (column likewise).
        if (active) {
            for (int c = 0; c < cb; ++c) {
                const float* s_plane = s_in + c * in_h * in_w;
                for (int ki = 0; ki < KH; ++ki) {
                    const float* s_row = s_plane + (threadIdx.y * stride_h + ki * dil_h) * in_w
                                         + threadIdx.x * stride_w;
                    for (int kj = 0; kj < KW; ++kj) {
                        const float v = s_row[kj * dil_w];
                        const int widx = c * KK + ki * KW + kj;
#pragma unroll
                        for (int f = 0; f < FILTERS_PER_BLOCK; ++f)
                            acc[f] += v * s_w[f * cb * KK + widx];   // same address for the
                    }                                                // whole warp: broadcast
                }
            }
        }
        __syncthreads();   // everyone is done with this slab before it is overwritten
    }
    if (active) {
#pragma unroll   // constant indices keep acc[] in registers
        for (int f = 0; f < FILTERS_PER_BLOCK; ++f)
            if (m0 + f < m_end)
                y[(((long long)n * M + m0 + f) * H_out + oh) * W_out + ow] = acc[f];
    }
}
