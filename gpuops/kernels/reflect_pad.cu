// Reflect padding (PyTorch ReflectionPad2d semantics).
//
// Work split: one thread ROW per output row. A block is (bx, by) threads and handles `by`
// output rows; the bx threads of a row walk along it, 4 cells per thread per step. The row's
// source row iy is computed once (one 32-bit division per row, not per element), and
// neighbouring threads write neighbouring outputs and read neighbouring inputs (except in the
// mirrored margins): coalesced.
// Every padded cell (oy, ox) copies input cell (reflect(oy - pad_top), reflect(ox - pad_left)).
//
// Why 4 cells per thread: one 16-byte store (float4) instead of four 4-byte stores puts 4x
// the bytes in flight per instruction; on the H100 this took the kernel from ~80% to ~90% of
// the copy bandwidth (bench/NOTES.md). A float4 store must start on a 16-byte boundary, and
// row starts are not (W_out is often odd), so each row writes its first 0-3 cells singly
// ("head"), then whole 4-cell groups, then the last 0-3 cells singly ("tail").
#include "index_math.cuh"

extern "C" __global__ void reflect_pad2d(
    const float* __restrict__ x,   // (planes, H, W), planes = N * C
    float* __restrict__ y,         // (planes, H_out, W_out), 16-byte aligned (CuPy allocations are)
    unsigned rows,                 // planes * H_out (< 2^31, checked by the host)
    int H, int W, int H_out, int W_out,
    int pad_top, int pad_left)
{
    // grid-stride over rows: a capped grid of blocks walks all rows (launching one block per
    // row costs more than the work when rows are many and short)
    for (unsigned row = blockIdx.x * blockDim.y + threadIdx.y; row < rows;
         row += gridDim.x * blockDim.y) {  // plane * H_out + oy
        const int oy = (int)(row % H_out);
        const long long plane = row / H_out;
        const float* __restrict__ src = x + (plane * H + reflect_index(oy - pad_top, H)) * W;
        float* __restrict__ dst = y + (long long)row * W_out;
        // this row starts (row * W_out) mod 4 floats past a 16-byte boundary; mod 4 survives
        // 32-bit wrap-around, so (row mod 4) * (W_out mod 4) is enough
        const int head = min(W_out, (int)((4u - ((row & 3u) * ((unsigned)W_out & 3u))) & 3u));
        if ((int)threadIdx.x < head)
            dst[threadIdx.x] = src[reflect_index((int)threadIdx.x - pad_left, W)];
        const int groups = (W_out - head) >> 2;                 // whole 4-cell groups
        float4* __restrict__ dst4 = reinterpret_cast<float4*>(dst + head);
#pragma unroll 2   // two independent groups in flight per thread
        for (int q = threadIdx.x; q < groups; q += blockDim.x) {
            const int i0 = head + (q << 2) - pad_left;          // source column of the first cell
            float4 v;
            if (i0 >= 0 && i0 + 3 < W) {                        // interior: four plain loads
                const float* p = src + i0;
                v = make_float4(p[0], p[1], p[2], p[3]);
            } else {                                            // touches a mirrored margin
                v = make_float4(src[reflect_index(i0, W)], src[reflect_index(i0 + 1, W)],
                                src[reflect_index(i0 + 2, W)], src[reflect_index(i0 + 3, W)]);
            }
            dst4[q] = v;
        }
        for (int ox = head + (groups << 2) + threadIdx.x; ox < W_out; ox += blockDim.x)
            dst[ox] = src[reflect_index(ox - pad_left, W)];     // tail
    }
}
