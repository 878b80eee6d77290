// Reflect padding (PyTorch ReflectionPad2d semantics): every padded cell (oy, ox) copies input
// cell (reflect_index(oy - pad_top, H), reflect_index(ox - pad_left, W)) (index_math.cuh).
//
// Two operations, each numbered on its own: reflect_pad_vN are versions of the forward pass,
// reflect_pad_backward_vN successive versions of its backward pass.
//
//   reflect_pad_v1                   one thread ROW per output row, 4 cells per thread per step
//   reflect_pad_backward_v1_scatter  the backward pass as PyTorch runs it: the forward walk over
//                                    the padded rows, each gradient ADDED onto its source cell (atomicAdd)
//   reflect_pad_backward_v2_gather   v1 turned around: one thread per INPUT cell sums the 1-3 x 1-3
//                                    padded cells that copied it; no atomics, deterministic
#include "index_math.cuh"

// The input row that padded row `row` (= plane * H_out + oy) copies, as the offset of its first
// cell: the forward pass reads it, the scatter backward adds the row's gradients into it.
__device__ __forceinline__ long long source_row(unsigned row, int H, int W, int H_out, int pad_top) {
    const long long plane = row / H_out;
    return (plane * H + reflect_index((int)(row % H_out) - pad_top, H)) * W;
}

// =======================================================================================
// v1 reflect_pad: one thread ROW per output row.
// A block is (bx, by) threads and handles `by` output rows at a time; the bx threads of a row
// walk along it. The row's source row is computed once per row (one 32-bit division, not one
// per element), and neighbouring threads write neighbouring outputs and read neighbouring
// inputs (except in the mirrored margins): coalesced.
// Why 4 cells per thread: one 16-byte store (float4) puts 4x the bytes in flight per store
// instruction (on the H100 the kernel went from ~80% to ~90% of copy bandwidth). A float4
// store must start on a 16-byte boundary, and row starts are not aligned when W_out is odd,
// so each row writes its first 0-3 cells singly ("head"), then whole 4-cell groups, then
// the last 0-3 cells singly ("tail").
// grid = (min(ceil(rows / by), cap), 1, 1): a capped grid of blocks walks all rows
// (grid-stride loop); launching one block per row costs more than the work when rows are
// many and short.
// =======================================================================================
extern "C" __global__ void reflect_pad_v1(
    const float* __restrict__ x,   // (planes, H, W), planes = N * C
    float* __restrict__ y,         // (planes, H_out, W_out), 16-byte aligned (CuPy allocations are)
    unsigned rows,                 // planes * H_out (< 2^31, checked by the host)
    int H, int W, int H_out, int W_out,
    int pad_top, int pad_left)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H_out + oy
        const float* __restrict__ src = x + source_row(row, H, W, H_out, pad_top);
        const long long out0 = (long long)row * W_out;          // y index of the row's cell 0
        // this row starts (row * W_out) mod 4 floats past a 16-byte boundary; mod 4 survives
        // 32-bit wrap-around, so (row mod 4) * (W_out mod 4) is enough
        const int head = min(W_out, (int)((4u - ((row & 3u) * ((unsigned)W_out & 3u))) & 3u));
        if ((int)threadIdx.x < head)
            store(y, out0 + threadIdx.x, src[reflect_index((int)threadIdx.x - pad_left, W)]);
        const int groups = (W_out - head) >> 2;                 // whole 4-cell groups
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
            store4(y, out0 + head + (q << 2), v);
        }
        for (int ox = head + (groups << 2) + threadIdx.x; ox < W_out; ox += blockDim.x)
            store(y, out0 + ox, src[reflect_index(ox - pad_left, W)]);   // tail
    }
}

// =======================================================================================
// reflect_pad_backward v1, scatter: the backward pass of reflect_pad_v1, as PyTorch's CUDA kernel does it
// (the source article). The forward pass copied input cell
// (reflect_index(oy - pad_top, H), reflect_index(ox - pad_left, W)) into padded cell (oy, ox),
// so the gradient of that padded cell belongs to that input cell. The forward walk over the PADDED
// rows, with the copy reversed: each padded cell's gradient is ADDED onto its source cell.
// An input cell near a border is the source of up to 3 cells per axis (itself and its mirror
// images), handled by different threads: atomicAdd, dx zeroed before the launch, and a
// summation order that can change from run to run. One cell per thread and step (no float4:
// atomics have no 16-byte form).
// =======================================================================================
extern "C" __global__ void reflect_pad_backward_v1_scatter(
    const float* __restrict__ dy,  // (planes, H_out, W_out): the gradient of the padded output
    float* __restrict__ dx,        // (planes, H, W), zeroed
    unsigned rows,                 // planes * H_out (< 2^31, checked by the host)
    int H, int W, int H_out, int W_out,
    int pad_top, int pad_left)
{
    FOR_EACH_ROW(row, rows) {  // row = plane * H_out + oy
        float* dst = dx + source_row(row, H, W, H_out, pad_top);   // the row this padded row copied
        const float* __restrict__ src = dy + (long long)row * W_out;
        for (int ox = threadIdx.x; ox < W_out; ox += blockDim.x)
            atomicAdd(&dst[reflect_index(ox - pad_left, W)], src[ox]);
    }
}

// =======================================================================================
// reflect_pad_backward v2, gather = v1 turned around: one thread per INPUT cell (y, x) sums the
// gradients of the padded cells that copied it: reflect_copies gives 1-3 rows and 1-3 columns,
// so 1 to 9 cells. Each input cell has one writer and a fixed order: no atomics, no zeroing,
// the same bits on every run. A row kernel over dx: row = plane * H + y; the row's padded
// rows are found once per row, the columns once per cell.
// pad_bottom and pad_right are what is left of the padded size: H_out - H - pad_top, W_out - W - pad_left.
// =======================================================================================
extern "C" __global__ void reflect_pad_backward_v2_gather(
    const float* __restrict__ dy,  // (planes, H_out, W_out)
    float* __restrict__ dx,        // (planes, H, W)
    unsigned rows,                 // planes * H (< 2^31, checked by the host)
    int H, int W, int H_out, int W_out,
    int pad_top, int pad_left)
{
    const int pad_bottom = H_out - H - pad_top, pad_right = W_out - W - pad_left;
    FOR_EACH_ROW(row, rows) {  // row = plane * H + y
        const int y = (int)(row % H);
        const long long plane = row / H;
        int ry[3];
        const int n_rows = reflect_copies(y, H, pad_top, pad_bottom, ry);
        const float* __restrict__ src = dy + plane * H_out * W_out + pad_left;   // padded column 0 of input column 0
        const long long out0 = (long long)row * W;
        for (int x = threadIdx.x; x < W; x += blockDim.x) {
            int rx[3];
            const int n_cols = reflect_copies(x, W, pad_left, pad_right, rx);
            float sum = 0.0f;
            for (int a = 0; a < n_rows; ++a) {
                const float* __restrict__ r = src + (long long)(ry[a] + pad_top) * W_out;
                for (int b = 0; b < n_cols; ++b) sum += r[rx[b]];
            }
            store(dx, out0 + x, sum);
        }
    }
}
