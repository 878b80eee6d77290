// unfold (im2col) and fold (col2im) with PyTorch semantics: stride, zero padding, dilation.
//
// cols has shape (N, C*KH*KW, L) with L = H_out * W_out. Its flat index decomposes into the
// 6-D index (n, c, ki, kj, oh, ow):
//   idx = ((((n*C + c)*KH + ki)*KW + kj)*H_out + oh)*W_out + ow
// and that element comes from input cell
//   ih = oh*stride_h - pad_h + ki*dil_h,   iw = ow*stride_w - pad_w + kj*dil_w
// (zero when (ih, iw) falls in the padding).

// Every kernel takes the same geometry arguments, in this order.
#define GEOMETRY_ARGS int H, int W, int KH, int KW, int H_out, int W_out, \
                      int stride_h, int stride_w, int pad_h, int pad_w, int dil_h, int dil_w

// unfold: one thread per element of cols. Consecutive threads write consecutive ow,
// so writes are coalesced and (for stride 1) so are the reads.
extern "C" __global__ void unfold_kernel(
    const float* __restrict__ x, float* __restrict__ cols, long long total, GEOMETRY_ARGS)
{
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        long long t = idx;
        const int ow = (int)(t % W_out); t /= W_out;
        const int oh = (int)(t % H_out); t /= H_out;
        const int kj = (int)(t % KW);    t /= KW;
        const int ki = (int)(t % KH);    t /= KH;
        const long long nc = t;            // n*C + c
        const int ih = oh * stride_h - pad_h + ki * dil_h;
        const int iw = ow * stride_w - pad_w + kj * dil_w;
        const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
        cols[idx] = inside ? x[(nc * H + ih) * W + iw] : 0.0f;
    }
}

// fold, scatter form: one thread per element of cols adds it onto the pixel it came from.
// Overlapping patches hit the same pixel, hence atomicAdd (and a summation order that can
// change from run to run). y must be zeroed before the launch.
extern "C" __global__ void fold_scatter_kernel(
    const float* __restrict__ cols, float* __restrict__ y, long long total, GEOMETRY_ARGS)
{
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        long long t = idx;
        const int ow = (int)(t % W_out); t /= W_out;
        const int oh = (int)(t % H_out); t /= H_out;
        const int kj = (int)(t % KW);    t /= KW;
        const int ki = (int)(t % KH);    t /= KH;
        const long long nc = t;
        const int ih = oh * stride_h - pad_h + ki * dil_h;
        const int iw = ow * stride_w - pad_w + kj * dil_w;
        if (ih >= 0 && ih < H && iw >= 0 && iw < W) {
            atomicAdd(&y[(nc * H + ih) * W + iw], cols[idx]);
        }
    }
}

// fold, gather form: one thread per OUTPUT pixel sums every column entry that covers it.
// Invert ih = oh*stride - pad + ki*dil: for each ki, oh = (ih + pad - ki*dil) / stride,
// valid only when the division is exact and 0 <= oh < H_out. No atomics, fixed order:
// the result is deterministic.
extern "C" __global__ void fold_gather_kernel(
    const float* __restrict__ cols, float* __restrict__ y, long long total, GEOMETRY_ARGS)
{
    const int L = H_out * W_out;
    for (long long idx = blockIdx.x * (long long)blockDim.x + threadIdx.x; idx < total;
         idx += (long long)gridDim.x * blockDim.x) {
        const int iw = (int)(idx % W);
        const long long row = idx / W;
        const int ih = (int)(row % H);
        const long long nc = row / H;
        float sum = 0.0f;
        for (int ki = 0; ki < KH; ++ki) {
            const int th = ih + pad_h - ki * dil_h;
            if (th < 0 || th % stride_h != 0) continue;
            const int oh = th / stride_h;
            if (oh >= H_out) continue;
            for (int kj = 0; kj < KW; ++kj) {
                const int tw = iw + pad_w - kj * dil_w;
                if (tw < 0 || tw % stride_w != 0) continue;
                const int ow = tw / stride_w;
                if (ow >= W_out) continue;
                const long long crow = (nc * KH + ki) * KW + kj;  // row of cols
                sum += cols[crow * L + (long long)oh * W_out + ow];
            }
        }
        y[idx] = sum;
    }
}
