// A benchmark peer: the naive convolution kernel described in the source article on direct
// convolution (shared/seeds/000), re-written from its description: one thread per output
// element, blockIdx.x * 16 + threadIdx.x = output pixel, blockIdx.y * 16 + threadIdx.y = filter,
// blockIdx.z = sample; taps outside, a bounds check per tap, channels inside. Zero padding,
// stride, no dilation, no groups, no bias: only what the article's kernel does. Not used by
// the app; bench/direct_variants.py times our v1 direct kernel against it.
extern "C" __global__ void article_naive_conv(
    const float* __restrict__ in, const float* __restrict__ weight, float* __restrict__ out,
    int n, int c, int h, int w, int k, int r, int s, int u, int v, int p, int q, int out_h, int out_w)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;   // output pixel
    const int y = blockIdx.y * blockDim.y + threadIdx.y;   // filter
    const int z = blockIdx.z;                              // sample
    if (x >= out_h * out_w || y >= k || z >= n) return;
    const int oh = x / out_w, ow = x % out_w;
    const int ih0 = oh * u - p, iw0 = ow * v - q;
    const long long in_base = (long long)z * c * h * w;
    const long long w_base = (long long)y * c * r * s;
    float sum = 0.0f;
    for (int i = 0; i < r; ++i) {
        for (int j = 0; j < s; ++j) {
            const int ih = ih0 + i, iw = iw0 + j;
            if (ih < 0 || iw < 0 || ih >= h || iw >= w) continue;
            long long io = in_base + (long long)ih * w + iw, wo = w_base + i * s + j;
            for (int ch = 0; ch < c; ++ch) {
                sum += in[io] * weight[wo];
                io += (long long)h * w;
                wo += r * s;
            }
        }
    }
    out[((long long)z * k + y) * out_h * out_w + x] = sum;
}
