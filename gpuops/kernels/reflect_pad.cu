// Reflect padding (PyTorch ReflectionPad2d semantics).
//
// Work split: one thread ROW per output row. A block is (bx, by) threads and handles `by`
// output rows; the bx threads of a row walk along it. The row's source row iy is computed
// once (one 32-bit division per row, not per element), and consecutive threads write
// consecutive outputs and read consecutive inputs (except in the mirrored margins): coalesced.
// Every padded cell (oy, ox) copies input cell (reflect(oy - pad_top), reflect(ox - pad_left)).
#include "index_math.cuh"

extern "C" __global__ void reflect_pad2d(
    const float* __restrict__ x,   // (planes, H, W), planes = N * C
    float* __restrict__ y,         // (planes, H_out, W_out)
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
#pragma unroll 4   // several independent loads in flight per thread
        for (int ox = threadIdx.x; ox < W_out; ox += blockDim.x)
            dst[ox] = src[reflect_index(ox - pad_left, W)];
    }
}
