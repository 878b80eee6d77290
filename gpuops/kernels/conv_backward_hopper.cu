// grad_weight on Hopper's own tensor-core instruction (sm_90a: H100, H200). conv_backward.cu's
// grad_weight_v1 runs on any GPU; this file continues its numbering where the hardware allows,
// and the host compiles it only for compute capability 9.0.
//
//   grad_weight_v2_3xtf32   dW as ONE implicit GEMM on the tensor cores, fp32 values as TF32
//                           pairs (v13's 3xTF32): no unfolded cols, x read through KW x S_h
//                           shifted copies whose rows are the GEMM's operand rows
//
// It includes conv2d_hopper.cu for v12's / v13's warpgroup machinery: the swizzled 128-byte stage
// rows and their descriptors (wgmma_descriptor), the instruction (wgmma_64xN), the 16-byte
// cp.async, the TF32 rounding and the split-K store (store_add).
#include "conv2d_hopper.cu"

// =======================================================================================
// grad_weight v2, IMPLICIT GEMM ON THE TENSOR CORES (3xTF32). grad_weight_v1 gives each weight
// a block that walks all N*L output pixels on the CUDA cores; the `gemm` algorithm unfolds x into
// cols (C*KH*KW values a pixel, KH*KW times x) and multiplies with cuBLAS. v2 computes, for
// each group g,
//   dW_g[m, j] = sum over k of dY[m, k] * X[j, k],   k = (n, oh, ow), j = (c, ki, kj)
//   X[j, k] = x[n, g*Cg + c, oh*S_h + ki*D_h - P_top, ow*S_w + kj*D_w - P_left]   (0 in the padding)
// a GEMM of Mg x Cg*KH*KW whose inner side (k) is every output pixel of the batch. wgmma's
// TF32 operands must both be K-MAJOR in shared memory: each row holds consecutive k. dY's rows
// are: dy[n, m, :] is one sample's L pixels in order. X's rows are not, in x itself: row (c, ki,
// kj) at pixel (oh, ow) reads x at column ow*S_w + kj*D_w - P_left, an offset of kj*D_w - P_left
// cells that breaks the 16-byte alignment of cp.async, and the padding has no cells at all. So
// the host first writes SHIFTED COPIES of x (grad_weight_v2_shifted_copy, below), one per column
// tap kj and row phase ph (0 <= ph < S_h):
//   xs[kj, ph, n, c, r, ow] = x[n, c, r*S_h + ph - P_top, ow*S_w + kj*D_w - P_left]
// (0 outside x, and in the columns W_out <= ow < Wp), rows of Wp = W_out rounded up to 4 cells.
// Tap ki of output row oh reads x row oh*S_h + ki*D_h - P_top = (oh + a)*S_h + ph - P_top with
//   ph = ki*D_h % S_h,  a = ki*D_h / S_h:
// copy (kj, ph), row oh + a. At stride 1 there is one phase and a = ki*D_h. So X's row (c, ki,
// kj) over one sample's pixels is the run
//   xs[kj, ph, n, c] + a*Wp + (oh*Wp + ow)
// contiguous and 16-byte aligned: the same cp.async as v13's stages, no bounds checks (the
// padding is zeros in the copy). The copies hold KW times x (cols: KH*KW), each value as v13's
// TF32 pair, and so does a copy of dY with the same rows of Wp cells (grad_weight_v2_split_pairs).
// A stage is 32 consecutive cells of one sample's Lr = H_out*Wp: ceil(Lr / 32) stages a sample;
// in the last, the 16-byte chunks past Lr are not copied but zero-filled (cp.async's source
// size 0) in both operands, and the zero columns ow >= W_out are zero in both copies: they add
// nothing, not even where x holds inf or NaN (0 x 0). What the block does is v13's, with the
// operands renamed:
//   1. block (x, y, z): 128 columns j (wgmma's N) x 64 filters (its rows) of group y / m_blocks,
//      stages z*per_split .. of the batch's N*ceil(Lr/32); split K adds into a zeroed dW (store_add);
//   2. a stage holds both parts of both operands, copied by cp.async from the pairs;
//   3. three wgmma a k-step, the small products first; the sums move to fp32 registers every
//      `promote` stages (v13's reasons: the tensor cores' additions along a long k round less
//      carefully than fp32's, and v2's k is every pixel of the batch).
// Shared memory: 4 stages of 64 + 128 rows x 2 parts x 128 bytes = 192 KB: one block an SM.
// Tried first: the operands read raw and split into pairs in shared memory by the thread that
// copied each chunk (no pair copies). Its ~10 instructions a value were the limit with 4 warps
// an SM (ncu: 255 registers, 4.2 cycles between a warp's instructions, 18% of the SM's issue).
// The GEMM alone on the H100, ms, both split in shared memory / dY only / neither (pairs from
// copies): 5x5 class 0.265 / 0.144 / 0.116, VGG-like 0.95 / 0.53 / 0.42; resnet56 0.168 / 0.138
// for the last two: more than the 0.03-0.07 ms the pair copy of dY costs.
// Measured (H100, `python3 -m bench.suite --parts backward --repeat 10`, two runs in one lease at
// 7d627cc, ms, run 1 / run 2; the whole call, copies included): 5x5 class 0.197 / 0.201 (gemm
// 0.428 / 0.415, PyTorch's grad_weight 0.164 / 0.167); VGG-like 0.674 / 0.693 (batch_gemm 1.26 /
// 1.16, PyTorch 0.485 / 0.487); resnet56 0.266 / 0.278 (forward_conv 0.287 / 0.299, PyTorch 0.330
// / 0.355); grouped g=4 0.533 / 0.537 (forward_conv 0.510 / 0.519: 32 filters a group leave half
// of wgmma's 64 rows empty). Of the 5x5 call, the GEMM is 0.12 ms (56 TFLOP/s) and the copies
// 0.06 + 0.04 ms (they write at about 1.6 TB/s).
// The row phases and padded rows (b0ed179; before, v2 refused stride_h > 1, H_out*W_out not a
// multiple of 32 and W_out not one of 4), grad_weight alone, H100, ms, two rounds: stride 2 (16 x 64 x 112 x 112, 128 filters)
// 0.293 / 0.292 (gemm 0.419 / 0.406); 7 x 7 x 1024 0.52 / 0.40 (batch_gemm 0.93 / 0.62).
// =======================================================================================
#define GW_BM 64            // filters a block: wgmma's 64 rows
#define GW_BN 128           // columns j = (c, ki, kj) of dW a block: wgmma's N
#define GW_STAGES 4         // one multiplied, one waiting, two loading (v12's pipeline)
#define GW_THREADS 128      // one warpgroup

// The TF32 pair of v: big = tf32(v) (round to nearest, ties away) and small = tf32(v - big);
// v - big is exact in fp32.
__device__ __forceinline__ void tf32_pair(float v, float& big, float& small) {
    big = __uint_as_float(to_tf32(v));
    small = __uint_as_float(to_tf32(v - big));
}

// x (N, C, H, W) -> xs (2, KW, S_h, N, C, Hr, Wp): the shifted copies of grad_weight v2 (above), as
// TF32 pairs, `part` values apart. A row kernel (FOR_EACH_ROW, index_math.cuh): copy row
// ((kj*S_h + ph)*N*C + n*C + c)*Hr + r is one thread row's, 4 consecutive cells a thread (one
// 16-byte store a part: Wp % 4 == 0); its coordinates cost three 32-bit divisions (the host
// checks that the rows count below 2^31). Measured first versions (5x5 class, H100, one part):
// a flat 64-bit index split into (kj, n, c, r, ow) per cell took 0.118 ms for 45 MB, a block per
// copy row 0.054; with both parts, one cell a thread wrote 1.3 TB/s, 4 cells a thread 1.5-1.6.
extern "C" __global__ void __launch_bounds__(256) grad_weight_v2_shifted_copy(
    const float* __restrict__ x, float* __restrict__ xs,
    unsigned rows,                 // KW*S_h*N*C*Hr
    int N, int C, int H, int W, int Hr, int stride_h, int W_out, int Wp, int stride_w, int pad_top,
    int pad_left, int dil_w,
    long long part)                // values from the TF32 parts to the parts they leave
{
    FOR_EACH_ROW(row, rows) {
        const int r = (int)(row % Hr);
        const unsigned nc = row / Hr % ((unsigned)N * C);       // n*C + c
        const unsigned copy = row / Hr / ((unsigned)N * C);     // kj*S_h + ph
        const int kj = (int)(copy / stride_h), ph = (int)(copy % stride_h);
        const int ih = input_coord(r, stride_h, pad_top, ph, 1);   // copy row r: input row r*S_h + ph - P_top
        const bool row_inside = ih >= 0 && ih < H;
        const float* __restrict__ x_row = x + ((long long)nc * H + (row_inside ? ih : 0)) * W;
        for (int ow = 4 * threadIdx.x; ow < Wp; ow += 4 * blockDim.x) {
            float big[4], small[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int iw = input_coord(ow + e, stride_w, pad_left, kj, dil_w);
                const bool inside = row_inside && ow + e < W_out && iw >= 0 && iw < W;
                tf32_pair(inside ? x_row[iw] : 0.0f, big[e], small[e]);
            }
            const long long o = (long long)row * Wp + ow;
            store4(xs, o, make_float4(big[0], big[1], big[2], big[3]));
            store4(xs, o + part, make_float4(small[0], small[1], small[2], small[3]));
        }
    }
}

// dy -> dys (2, N, M, H_out, Wp): [0] the TF32 part of every value, [1] the TF32 part of what
// it leaves (v13's copies do the same for x and w), in rows of Wp cells (zeros past W_out). A
// grid-stride loop, 4 cells (16 bytes) a thread a pass: count = N*M*H_out*Wp, a multiple of 4.
// Where Wp == W_out the 4 cells are 4 consecutive values of dy (one 16-byte load); elsewhere
// each cell finds its row (a 64-bit division) and reads one value or none.
extern "C" __global__ void __launch_bounds__(256) grad_weight_v2_split_pairs(
    const float* __restrict__ dy, float* __restrict__ dys, long long count, int W_out, int Wp)
{
    const long long step = 4ll * gridDim.x * blockDim.x;
    for (long long i = 4ll * (blockIdx.x * blockDim.x + threadIdx.x); i < count; i += step) {
        float4 v;
        if (Wp == W_out) {
            v = *reinterpret_cast<const float4*>(dy + i);
        } else {
            const long long row = i / Wp;
            const int ow = (int)(i - row * Wp);              // a multiple of 4: the quad stays in the row
            const float* __restrict__ dy_row = dy + row * W_out;
            v.x = ow < W_out ? dy_row[ow] : 0.0f;
            v.y = ow + 1 < W_out ? dy_row[ow + 1] : 0.0f;
            v.z = ow + 2 < W_out ? dy_row[ow + 2] : 0.0f;
            v.w = ow + 3 < W_out ? dy_row[ow + 3] : 0.0f;
        }
        float4 big, small;
        tf32_pair(v.x, big.x, small.x);
        tf32_pair(v.y, big.y, small.y);
        tf32_pair(v.z, big.z, small.z);
        tf32_pair(v.w, big.w, small.w);
        store4(dys, i, big);
        store4(dys, i + count, small);
    }
}

extern "C" __global__ void __launch_bounds__(GW_THREADS, 1) grad_weight_v2_3xtf32(
    const float* __restrict__ dys, // (2, N, M, H_out, Wp): grad_weight_v2_split_pairs of dy
    const float* __restrict__ xs,  // (2, KW, S_h, N, C, Hr, Wp): grad_weight_v2_shifted_copy of x
    float* __restrict__ dw,        // (M, C/groups, KH, KW); zeroed where k_splits > 1
    int N, int C, int M, int KH, int KW, int H_out, int Wp, int stride_h, int dil_h, int groups, int Hr,
    int m_blocks,                  // filter blocks a group: blockIdx.y = group * m_blocks + block
    int k_splits,                  // blocks along z sharing a column tile's stages
    int promote,                   // stages between moves of the sums into fp32 registers
    long long dy_part,             // values from dys's TF32 parts to the parts they leave
    long long xs_part)             // ... and xs's
{
    constexpr int A_BYTES = GW_BM * WG_ROW_BYTES;           // dY rows, one part: 8 KB
    constexpr int B_BYTES = GW_BN * WG_ROW_BYTES;           // X rows, one part: 16 KB
    constexpr int STAGE_BYTES = 2 * (A_BYTES + B_BYTES);    // A big, A small, B big, B small: 48 KB
    constexpr int CHUNKS = WG_ROW_BYTES / 16;               // 16-byte copies a row: 8
    constexpr int ROWS = GW_THREADS / CHUNKS;               // rows one pass of the block copies: 16
    constexpr int KC = WG_ROW_BYTES / 4;                    // pixels a stage: 32

    extern __shared__ unsigned char wg_smem_raw[];          // the host asks for 1 KB more, so that
    unsigned char* smem = wg_smem_raw + ((WG_ATOM_BYTES - static_cast<unsigned>(   // the stages start
        __cvta_generic_to_shared(wg_smem_raw)) % WG_ATOM_BYTES) % WG_ATOM_BYTES);  // on 1 KB boundaries

    const int t = threadIdx.x, warp = t / 32;
    const int Cg = C / groups, Mg = M / groups;
    const int cols = Cg * KH * KW;                           // dW_g's columns j = (c*KH + ki)*KW + kj
    const int Lr = H_out * Wp;                               // a sample's cells in dys and in a copy run
    const int per_sample = (Lr + KC - 1) / KC;               // its stages, the last zero-filled past Lr
    const int g = blockIdx.y / m_blocks;
    const int m0 = (blockIdx.y % m_blocks) * GW_BM;          // first filter of the block, in its group
    const int j0 = blockIdx.x * GW_BN;                       // first column of the block
    const int all_tiles = N * per_sample;                    // stages of the whole k (< 2^31 / 32: host)
    const int per_split = (all_tiles + k_splits - 1) / k_splits;
    const int tile0 = blockIdx.z * per_split;
    const int tiles = min(all_tiles - tile0, per_split);

    // ---- the copies: thread t moves chunk t % 8 of rows t / 8 + 16i, to the swizzled place of
    // that chunk (v12's layout: 16-byte chunk q of row r at chunk q ^ (r % 8)); every row a
    // thread copies has the same r % 8, so the same offset `dst` within its row.
    const int chunk = t % CHUNKS, row = t / CHUNKS;
    const int dst = row * WG_ROW_BYTES + ((chunk ^ (row % 8)) * 16);
    const float* a_src[GW_BM / ROWS];                        // dY row of filter m, sample 0
    bool a_ok[GW_BM / ROWS];
#pragma unroll
    for (int i = 0; i < GW_BM / ROWS; ++i) {
        const int m = m0 + row + i * ROWS;
        a_ok[i] = m < Mg;
        a_src[i] = dys + (long long)(g * Mg + (a_ok[i] ? m : 0)) * Lr + chunk * 4;
    }
    const float* b_src[GW_BN / ROWS];                        // xs row of column (c, ki, kj), sample 0
    bool b_ok[GW_BN / ROWS];
#pragma unroll
    for (int i = 0; i < GW_BN / ROWS; ++i) {
        const int j = j0 + row + i * ROWS;
        b_ok[i] = j < cols;
        const int jj = b_ok[i] ? j : 0;
        const int kj = jj % KW, ki = jj / KW % KH, c = jj / (KW * KH);
        const int ph = ki * dil_h % stride_h, a = ki * dil_h / stride_h;
        // copy (kj, ph), sample 0, channel g*Cg + c, row a: where tap ki's output row 0 starts
        b_src[i] = xs + ((((long long)kj * stride_h + ph) * N * C + g * Cg + c) * Hr + a) * Wp + chunk * 4;
    }
    // the stage to load next: cell p of sample n, and how far sample n starts in dY and in xs
    int n = tile0 / per_sample, p = (tile0 % per_sample) * KC;
    long long a_n = (long long)n * M * Lr, b_n = (long long)n * C * Hr * Wp;

    auto load_stage = [&](int s) {
        unsigned char* stage = smem + s * STAGE_BYTES + dst;
        const bool in = p + chunk * 4 < Lr;                  // else zeros: the sample's last stage overhangs
        const int at = in ? p : 0;                           // (and the address stays inside the arrays)
#pragma unroll
        for (int part = 0; part < 2; ++part)
#pragma unroll
            for (int i = 0; i < GW_BM / ROWS; ++i)
                cp_async16(reinterpret_cast<float*>(stage + part * A_BYTES + i * ROWS * WG_ROW_BYTES),
                           a_src[i] + part * dy_part + a_n + at, a_ok[i] && in);
#pragma unroll
        for (int part = 0; part < 2; ++part)
#pragma unroll
            for (int i = 0; i < GW_BN / ROWS; ++i)
                cp_async16(reinterpret_cast<float*>(stage + 2 * A_BYTES + part * B_BYTES + i * ROWS * WG_ROW_BYTES),
                           b_src[i] + part * xs_part + b_n + at, b_ok[i] && in);
        asm volatile("cp.async.commit_group;\n" ::);
        p += KC;
        if (p >= Lr) {                                       // the next stage is the next sample's first
            p = 0;
            a_n += (long long)M * Lr;
            b_n += (long long)C * Hr * Wp;
        }
    };
    float acc[1][GW_BN / 8][4];                              // store_warp_tile's shape: one 16-row tile
    float total[1][GW_BN / 8][4];                            // the sums moved out of acc (v13)
#pragma unroll
    for (int j = 0; j < GW_BN / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[0][j][e] = total[0][j][e] = 0.0f;
    int add = 1;                                             // 0: the next wgmma starts acc afresh

#pragma unroll
    for (int s = 0; s < GW_STAGES - 2; ++s) {                // the pipeline fills: stages 0 and 1 loading
        if (s < tiles) load_stage(s);
        else asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int tile = 0; tile < tiles; ++tile) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(GW_STAGES - 3));   // my copies of `tile` landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");      // ... visible to the tensor cores
        __syncthreads();           // everyone's copies landed; the wgmma of tile - 2 finished
        if (tile + GW_STAGES - 2 < tiles) load_stage((tile + GW_STAGES - 2) % GW_STAGES);  // into its slot
        else asm volatile("cp.async.commit_group;\n" ::);
        const unsigned char* stage = smem + (tile % GW_STAGES) * STAGE_BYTES;
        const unsigned long long a = wgmma_descriptor(stage);
        const unsigned long long b = wgmma_descriptor(stage + 2 * A_BYTES);
        wgmma_hold(acc[0]);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {                     // 4 k-steps of 8 pixels: +2 in the address field
            wgmma_64xN<PREC_TF32, GW_BN>(acc[0], a + (A_BYTES >> 4) + 2 * kk, b + 2 * kk, add);   // small x big
            add = 1;
            wgmma_64xN<PREC_TF32, GW_BN>(acc[0], a + 2 * kk, b + (B_BYTES >> 4) + 2 * kk);         // big x small
            wgmma_64xN<PREC_TF32, GW_BN>(acc[0], a + 2 * kk, b + 2 * kk);                          // big x big
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if ((tile + 1) % promote == 0 || tile + 1 == tiles) {   // v13's move of the sums (see above)
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            wgmma_hold(acc[0]);
#pragma unroll
            for (int j = 0; j < GW_BN / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) total[0][j][e] += acc[0][j][e];
            add = 0;
        } else {
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // the previous stage's are done
            wgmma_hold(acc[0]);
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");

    // ---- write-back: warp w holds filters m0 + 16w .. + 15; lane 4q + r holds, of every 8-column
    // block jb, columns 8jb + 2r and 8jb + 2r + 1 of filters 16w + q and 16w + q + 8 (v12's
    // layout). Consecutive columns are consecutive weights: dW_g[m, j] = dw[(g*Mg + m)*cols + j].
    const int lane = t % 32, q = lane / 4, r = lane % 4;
#pragma unroll
    for (int jb = 0; jb < GW_BN / 8; ++jb)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int m = m0 + 16 * warp + q + (e >= 2 ? 8 : 0);
            const int j = j0 + 8 * jb + 2 * r + (e & 1);
            if (m >= Mg || j >= cols) continue;
            const long long o = (long long)(g * Mg + m) * cols + j;
            if (k_splits > 1) store_add(dw, o, total[0][jb][e]);   // partial sums: add
            else store(dw, o, total[0][jb][e]);
        }
}
