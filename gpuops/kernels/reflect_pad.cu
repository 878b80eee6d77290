// Reflect padding (PyTorch ReflectionPad2d semantics), one thread per OUTPUT element.
// Every padded cell (oy, ox) copies input cell (reflect(oy - pad_top), reflect(ox - pad_left)):
// the output is written once, in order, so the writes are perfectly coalesced.
#include "index_math.cuh"

extern "C" __global__ void reflect_pad2d(
    const float* __restrict__ x,   // (planes, H, W), planes = N * C
    float* __restrict__ y,         // (planes, H_out, W_out)
    long long total,               // planes * H_out * W_out
    int H, int W, int H_out, int W_out,
    int pad_top, int pad_left)
{
    // A grid-stride loop lets one launch cover any tensor size.
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        const int ox = (int)(idx % W_out);
        const long long row = idx / W_out;          // plane * H_out + oy
        const int oy = (int)(row % H_out);
        const long long plane = row / H_out;
        const int iy = reflect_index(oy - pad_top, H);
        const int ix = reflect_index(ox - pad_left, W);
        y[idx] = x[(plane * H + iy) * W + ix];
    }
}
