// 2-D convolution on Hopper's own tensor-core instruction (sm_90a: H100, H200). The versions
// before it (conv2d.cu) run on any GPU since Volta; this file continues the progression where
// the hardware allows, and the host compiles it only for compute capability 9.0.
//
//   v12 warpgroup MMA   v10 / v11 with `wgmma`: asynchronous, operands read from shared memory
//   v13 fp32 by 3xTF32  v12 in fp32 accuracy: each operand as a TF32 pair, three products per term
//   v14 pixel rows      v12 / v13 with the operands swapped: pixels on wgmma's 64 rows, filters on
//                       its N = 32 or 64 columns, for groups of few filters
//   v16 1x1 from NCHW   v14 on 1x1 layers with the pixels given to wgmma from registers: x read
//                       as it lies, no channels-last copy
//   v17 halo tiles      v16 for windows at stride 1: x read as it lies into a tile of the rows
//                       under a block's pixels and the window's, every tap an offset into it
//
// It includes conv2d.cu for what it keeps from v10 and v11: the channels-last copies, the 16-byte
// cp.async, the write-back of a warp's sums (store_warp_tile) and the precision codes.
#include "conv2d.cu"

// =======================================================================================
// v12 implicit GEMM on HOPPER's WARPGROUP MMA = v10 (TF32) / v11 (bf16, fp16) with the
// multiply-adds issued by `wgmma.mma_async`, the tensor-core instruction of sm_90a. v10 spends
// its issue slots feeding mma.sync: per 32-deep stage a warp loads its fragments with ldmatrix
// (8 x4 loads) and issues 64 mma of 16 x 8 x 8. What changes:
//   1. the unit of work is a WARPGROUP (4 consecutive warps, 128 threads). One wgmma multiplies
//      64 filters x 8 values of k (16 for 16-bit operands) by 8 (16) x 128 pixels into 64 x 128
//      sums held in the warpgroup's registers (64 a thread), and reads BOTH operands straight
//      from shared memory: no ldmatrix, no fragments, one instruction for 64 mma.sync;
//   2. shared memory holds each stage row (one filter's or one pixel's 32 TF32 / 64 16-bit
//      values of k: 128 bytes) in the layout the tensor cores read: 8 rows form a 1 KB atom in
//      which 16-byte chunk j of row r sits at chunk j ^ (r % 8) (the "128-byte swizzle"): no
//      padding, and the 8 rows the hardware reads together fall in different banks. A 64-bit
//      descriptor (wgmma_descriptor) tells wgmma where a tile starts, that it is swizzled, and
//      that its atoms are 1 KB apart along the filters (pixels). k-step kk of a stage starts
//      32 * kk bytes into the rows: the hardware applies the swizzle to the address it forms;
//   3. wgmma is ASYNCHRONOUS: it returns at once and the warpgroup waits with wgmma.wait_group.
//      The loop leaves one stage's wgmmas running while it issues the next, and keeps the copies
//      of the two stages after that in flight: 4 stages (WG_STAGES);
//   4. cp.async writes shared memory as ordinary stores do; the tensor cores read it through the
//      "async proxy", so each thread fences (fence.proxy.async) before the barrier that hands a
//      stage to them.
// Unchanged: the channels-last copies (x_cl, w_cl, rounded by v10's / v11's copy kernels), a
// stage = one tap x 128 bytes of channels, split K, and the write-back: in the 64 x 128 sums of
// a warpgroup, warp w holds rows 16w..16w+15, and lane 4g + t holds sums (g, 2t), (g, 2t+1),
// (g+8, 2t), (g+8, 2t+1) of every 8-pixel column, exactly as in mma.sync's 16 x 8 tiles.
// Block tiles: 128 x 128 (two warpgroups) where a group has more than 64 filters, else 64 x 128
// (one warpgroup). Measured on the H100 (one run, with the copies, ms; v10 / v12 / cuDNN-TF32):
// VGG-like 0.285 / 0.203 / 0.215, 5x5 0.124 / 0.081 / 0.081, grouped g=4 0.260 / 0.204 / 0.175,
// late 14x14x256 0.131 / 0.106 / 0.082, 7x7x512 0.122 / 0.100 / 0.077, 7x7x1024 0.222 / 0.173 /
// 0.155, resnet56 0.149 / 0.107 / 0.106. A 128 x 256 tile (two n128 wgmma a k-step, 213
// registers) was slower or level on every one of these layers.
// =======================================================================================
#define WG_STAGES 4         // shared-memory stages: one multiplied, one waiting, two loading
#define WG_ROW_BYTES 128    // one stage row: 32 TF32 or 64 16-bit values of k
#define WG_ATOM_BYTES 1024  // 8 rows: the swizzle's period, and the descriptor's stride

// TF32 rounding to nearest with ties to EVEN (cvt.rn.tf32, sm_90 and later): one instruction on
// Hopper, where cvt.rna (ties away from zero, to_tf32 in conv2d.cu: v7-v16 and the copy kernels)
// is three (ptxas builds it from a compare, an add and a mask). The two differ only on a value
// exactly halfway between two TF32 numbers; each is off by at most half a TF32 step. v16 and v17,
// which round x as each thread loads its fragments (v17: every halo value once per tap), use
// this one; their w is rounded with cvt.rna (v17: by v10's copy kernel; v16: in place).
__device__ __forceinline__ unsigned to_tf32_even(float v) {
    unsigned r;
    asm("cvt.rn.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}

// The descriptor of a K-major operand tile in shared memory: rows of 128 bytes, 128-byte swizzle,
// 1 KB atoms of 8 rows one after the other (the tile must start on a 1 KB boundary).
__device__ __forceinline__ unsigned long long wgmma_descriptor(const void* tile) {
    const unsigned long long address = static_cast<unsigned>(__cvta_generic_to_shared(tile));
    return ((address & 0x3FFFF) >> 4)                 // bits 0-13: start address / 16
         | (1ull << 16)                               // bits 16-29: leading offset / 16 (unused when swizzled)
         | ((unsigned long long)(WG_ATOM_BYTES >> 4) << 32)  // bits 32-45: next 8 rows / 16
         | (1ull << 62);                              // bits 62-63: 1 = 128-byte swizzle
}

// One wgmma of 64 rows x N columns: d += A (64 x k, from descriptor a) * B (k x N, from
// descriptor b), k = 8 (TF32) or 16 (bf16 / fp16); d[j][e] is sum e of 8-column block j. v12 and
// v13: 64 filters x 128 pixels, every precision; v14: 64 pixels x 32 or 64 filters, TF32.
#define WG_D4(j) "+f"(d[j][0]), "+f"(d[j][1]), "+f"(d[j][2]), "+f"(d[j][3])
#define WG_D16 WG_D4(0), WG_D4(1), WG_D4(2), WG_D4(3)
#define WG_D32 WG_D16, WG_D4(4), WG_D4(5), WG_D4(6), WG_D4(7)
#define WG_D64 WG_D32, WG_D4(8), WG_D4(9), WG_D4(10), WG_D4(11), WG_D4(12), WG_D4(13), WG_D4(14), WG_D4(15)
#define WG_REGS16 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define WG_REGS32 WG_REGS16 ", %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WG_REGS "{" WG_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
                "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
template <int PREC, int N = 128>
__device__ __forceinline__ void wgmma_64xN(float (&d)[N / 8][4], unsigned long long a, unsigned long long b,
                                           int add = 1) {
    // add (scale-d) = 1: d += A * B; 0: d = A * B (what d held is ignored). TF32 takes no
    // transpose flags (K-major only); for 16-bit operands the last two 0s say both tiles are K-major.
    static_assert(N == 128 || (PREC == PREC_TF32 && (N == 32 || N == 64)), "the shapes v12-v14 issue");
    if constexpr (N == 32)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {" WG_REGS16 "}, %16, %17, p, 1, 1;\n}\n"
                     : WG_D16 : "l"(a), "l"(b), "r"(add));
    else if constexpr (N == 64)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" WG_REGS32 "}, %32, %33, p, 1, 1;\n}\n"
                     : WG_D32 : "l"(a), "l"(b), "r"(add));
    else if constexpr (PREC == PREC_TF32)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 " WG_REGS ", %64, %65, p, 1, 1;\n}\n"
                     : WG_D64 : "l"(a), "l"(b), "r"(add));
    else if constexpr (PREC == PREC_BF16)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " WG_REGS ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : WG_D64 : "l"(a), "l"(b), "r"(add));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " WG_REGS ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                     : WG_D64 : "l"(a), "l"(b), "r"(add));
}

// The registers wgmma writes behind the compiler's back stay where they are across this point
// (no copy, no reordering of their uses around the wgmma waits).
template <int NT>
__device__ __forceinline__ void wgmma_hold(float (&d)[NT][4]) {
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[j][e]) :: "memory");
}

// Write back one warp's sums of v14, where wgmma's rows are pixels: sum e of 8-column block j is
// batch pixel p_first + g (+8 for e >= 2) and filter m_first + 8j + 2t (+1 for odd e) of group
// g_idx (lane 4g + t; the layout of v12's sums with the roles swapped). Neighbouring sums are
// now L apart in y, so each is its own store; a warp's store of one (j, e) writes 8 consecutive
// pixels of 4 filters: four runs of 32 bytes. Split K and the bias as in store_warp_tile.
template <int NT>
__device__ __forceinline__ void store_pixel_rows(const float (&acc)[NT][4], float* __restrict__ y,
    const float* __restrict__ bias, int M, int Mg, int g_idx, int L, int P, int p_first, int m_first, int k_splits)
{
    const int lane = threadIdx.x % 32, gr = lane / 4, tq = lane % 4;
    int n[2], l[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {                    // rows g and g + 8: the thread's two pixels
        const int p = p_first + gr + 8 * h;
        n[h] = p / L;
        l[h] = p % L;
    }
#pragma unroll
    for (int j = 0; j < NT; ++j) {
#pragma unroll
        for (int odd = 0; odd < 2; ++odd) {
            const int m = m_first + 8 * j + 2 * tq + odd;
            if (m >= Mg) continue;
            const int mm = g_idx * Mg + m;
            const float b_m = (bias && blockIdx.z == 0) ? bias[mm] : 0.0f;
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                if (p_first + gr + 8 * h >= P) continue;
                const long long o = y_offset(n[h], mm, l[h], M, L);
                const float v = acc[j][2 * h + odd] + b_m;
                if (k_splits > 1) store_add(y, o, v);    // partial sums: add
                else store(y, o, v);
            }
        }
    }
}

// The GEMM of v12 (PARTS = 1), v13 (PARTS = 2: every operand row twice, its TF32 part and the
// TF32 part of what that left, x_part / w_part values apart in the copies; see v13 below) and v14
// (PIXEL_ROWS: the same stages, the pixels on wgmma's rows and the filters on its columns; see
// v14 below). BM filters x BN pixels a block; a warpgroup per 64 rows of wgmma's product.
template <int BM, int BN, int PREC, int PARTS = 1, int STAGES = WG_STAGES, bool PIXEL_ROWS = false>
__device__ __forceinline__ void warpgroup_conv(
    const typename CopyValue<PREC>::type* __restrict__ x_cl, const typename CopyValue<PREC>::type* __restrict__ w_cl,
    const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    long long x_part = 0, long long w_part = 0, int promote = 0, int x_via_l1 = 0)
{
    using V = typename CopyValue<PREC>::type;
    constexpr int WG_M = PIXEL_ROWS ? BN : BM;               // wgmma's rows: filters (v12, v13) or pixels (v14)
    constexpr int WG_N = PIXEL_ROWS ? BM : BN;               // its columns: one wgmma covers them all
    constexpr int THREADS = 2 * WG_M;                        // a warpgroup (128 threads) per 64 rows
    constexpr int KC = WG_ROW_BYTES / sizeof(V);             // k values a stage row: 32 or 64
    constexpr int CHUNKS = WG_ROW_BYTES / 16;                // 16-byte copies a row: 8
    constexpr int PER_CHUNK = KC / CHUNKS;                   // k values one copy moves
    constexpr int ROWS = THREADS / CHUNKS;                   // rows one pass of the block copies
    // a stage: the filter rows (part 0, then part 1 in v13 / v14), then the pixel rows (the same)
    constexpr int F_BYTES = BM * WG_ROW_BYTES, X_BYTES = BN * WG_ROW_BYTES;
    constexpr int STAGE_BYTES = PARTS * (F_BYTES + X_BYTES);
    static_assert(WG_M % 64 == 0 && ROWS % 8 == 0 && BM % ROWS == 0 && BN % ROWS == 0, "tile layout");
    static_assert(PARTS == 1 || PREC == PREC_TF32, "3xTF32 splits fp32 values into TF32 pairs");

    extern __shared__ unsigned char wg_smem_raw[];           // the host asks for 1 KB more:
    unsigned char* smem = wg_smem_raw + ((WG_ATOM_BYTES - static_cast<unsigned>(   // the tiles start
        __cvta_generic_to_shared(wg_smem_raw)) % WG_ATOM_BYTES) % WG_ATOM_BYTES);  // on 1 KB boundaries

    const int t = threadIdx.x, warpgroup = t / 128, warp = (t / 32) % 4;
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

    // ---- the copies, as v10's: thread t moves chunk t % 8 of rows t / 8 + i * ROWS of both
    // operands, to the swizzled place of that chunk. ROWS is a multiple of 8, so every row a thread
    // copies has the same r % 8 and the same swizzled offset within its row.
    const int chunk = t % CHUNKS, row = t / CHUNKS, k_chunk = chunk * PER_CHUNK;
    const int dst = row * WG_ROW_BYTES + ((chunk ^ (row % 8)) * 16);
    const V* w_src[BM / ROWS];                       // weight rows (filters); none past Mg
    bool w_ok[BM / ROWS];
#pragma unroll
    for (int i = 0; i < BM / ROWS; ++i) {
        const int m = m0 + row + i * ROWS;
        w_ok[i] = m < Mg;
        w_src[i] = filter_row(w_cl, g * Mg + (w_ok[i] ? m : 0), Kp) + k_chunk;
    }
    const V* x_src[BN / ROWS];                       // x_cl cell of tap (0, 0) of each pixel
    bool x_ok[BN / ROWS];
#pragma unroll
    for (int i = 0; i < BN / ROWS; ++i) {
        const int p = p0 + row + i * ROWS;
        x_ok[i] = p < P;
        x_src[i] = pixel_cell(x_cl, x_ok[i] ? p : 0, L, W_out, Hp, Wp, C, g * Cg, stride_h, stride_w) + k_chunk;
    }
    StageWalk next(tile0 * KC, Cg, KW, KC, dil_h, dil_w, Wp, C);   // the next stage to load (v10's walk)

    auto load_stage = [&](int s) {
        unsigned char* stage = smem + s * STAGE_BYTES + dst;
#pragma unroll
        for (int part = 0; part < PARTS; ++part) {
#pragma unroll
            for (int i = 0; i < BM / ROWS; ++i)
                cp_async16(reinterpret_cast<float*>(stage + part * F_BYTES + i * ROWS * WG_ROW_BYTES),
                           reinterpret_cast<const float*>(w_src[i] + part * w_part + next.k), w_ok[i]);
#pragma unroll
            for (int i = 0; i < BN / ROWS; ++i) {
                float* d = reinterpret_cast<float*>(stage + PARTS * F_BYTES + part * X_BYTES + i * ROWS * WG_ROW_BYTES);
                const float* s = reinterpret_cast<const float*>(x_src[i] + part * x_part + next.x());
                if (x_via_l1) cp_async16_l1(d, s, x_ok[i]);   // v14 where a stage is a whole tap
                else cp_async16(d, s, x_ok[i]);
            }
        }
        asm volatile("cp.async.commit_group;\n" ::);
        next.next();
    };

    // which tile of a stage is wgmma's A (rows; this warpgroup's 64 of them) and which its B, and
    // the distance from each one's TF32 part to the part that TF32 part left (v13, v14), / 16
    constexpr int A_OFFSET = PIXEL_ROWS ? PARTS * F_BYTES : 0, B_OFFSET = PIXEL_ROWS ? 0 : PARTS * F_BYTES;
    constexpr unsigned long long A_SMALL = (PIXEL_ROWS ? X_BYTES : F_BYTES) >> 4;
    constexpr unsigned long long B_SMALL = (PIXEL_ROWS ? F_BYTES : X_BYTES) >> 4;

    float acc[1][WG_N / 8][4];                       // store_warp_tile's shape: one 16-row tile
    float total[1][WG_N / 8][4];                     // v13, v14: the sums moved out of acc (see v13)
#pragma unroll
    for (int j = 0; j < WG_N / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[0][j][e] = total[0][j][e] = 0.0f;
    int add = 1;                                     // 0: the next wgmma starts acc afresh

#pragma unroll
    for (int s = 0; s < STAGES - 2; ++s) {           // the pipeline fills: stages 0 .. STAGES - 3 loading
        if (s < tiles) load_stage(s);
        else asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int tile = 0; tile < tiles; ++tile) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(STAGES - 3));      // my copies of `tile` landed
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");     // ... visible to the tensor cores
        __syncthreads();      // everyone's copies landed; every warpgroup's wgmma of tile - 2 finished
        if (tile + STAGES - 2 < tiles) load_stage((tile + STAGES - 2) % STAGES);  // into its slot
        else asm volatile("cp.async.commit_group;\n" ::);
        const unsigned char* stage = smem + (tile % STAGES) * STAGE_BYTES;
        const unsigned long long a = wgmma_descriptor(stage + A_OFFSET + warpgroup * 64 * WG_ROW_BYTES);
        const unsigned long long b = wgmma_descriptor(stage + B_OFFSET);
        wgmma_hold(acc[0]);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {             // 4 k-steps of 32 bytes: +2 in the address field
            if constexpr (PARTS == 2) {              // v13: the two small products first (see below)
                wgmma_64xN<PREC, WG_N>(acc[0], a + A_SMALL + 2 * kk, b + 2 * kk, add);
                add = 1;
                wgmma_64xN<PREC, WG_N>(acc[0], a + 2 * kk, b + B_SMALL + 2 * kk);
            }
            wgmma_64xN<PREC, WG_N>(acc[0], a + 2 * kk, b + 2 * kk);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if (PARTS == 2 && ((tile + 1) % promote == 0 || tile + 1 == tiles)) {
            // v13: every `promote` stages, wait for the tensor cores and add their sums into
            // `total` with ordinary fp32 additions (rounded to nearest); the next wgmma starts
            // acc afresh. The tensor cores' own additions round less carefully: along a long k
            // their error grows with every stage (measured without this step: 4-7x the fp32
            // kernels' error on layers 2,304 to 9,216 deep)
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            wgmma_hold(acc[0]);
#pragma unroll
            for (int j = 0; j < WG_N / 8; ++j)
#pragma unroll
                for (int e = 0; e < 4; ++e) total[0][j][e] += acc[0][j][e];
            add = 0;
        } else {
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");  // the previous stage's are done
            wgmma_hold(acc[0]);
        }
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    wgmma_hold(acc[0]);
    const int first_row = warpgroup * 64 + warp * 16;            // this warp's 16 rows of the product
    if constexpr (PIXEL_ROWS)
        store_pixel_rows<WG_N / 8>(PARTS == 2 ? total[0] : acc[0], y, bias, M, Mg, g, L, P, p0 + first_row, m0,
                                   k_splits);
    else
        store_warp_tile<1, WG_N / 8>(PARTS == 2 ? total : acc, y, bias, M, Mg, g, L, P, m0 + first_row, p0,
                                     k_splits);
}

// The kernels of v12. TF32: x_cl and w_cl from v10's copy (TF32 values in floats); bf16 / fp16:
// from v11's (16-bit values as unsigned short). Tile 128 x 128: two warpgroups, one block an SM
// (128 KB of stages); 64 x 128: one warpgroup, two blocks an SM (96 KB each).
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v12_tf32_128x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    warpgroup_conv<128, 128, PREC_TF32>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h, stride_w,
        pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 2) conv2d_v12_tf32_64x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    warpgroup_conv<64, 128, PREC_TF32>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h, stride_w,
        pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v12_bf16_128x128(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    warpgroup_conv<128, 128, PREC_BF16>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h, stride_w,
        pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 2) conv2d_v12_bf16_64x128(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    warpgroup_conv<64, 128, PREC_BF16>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h, stride_w,
        pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v12_fp16_128x128(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    warpgroup_conv<128, 128, PREC_FP16>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h, stride_w,
        pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}
extern "C" __global__ void __launch_bounds__(128, 2) conv2d_v12_fp16_64x128(
    const unsigned short* __restrict__ x_cl, const unsigned short* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp)
{
    warpgroup_conv<64, 128, PREC_FP16>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, stride_h, stride_w,
        pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp);
}

// =======================================================================================
// v13 fp32 ON THE TENSOR CORES (3xTF32) = v12 in TF32 with each operand value v carried as a
// PAIR of TF32 values: big = tf32(v) and small = tf32(v - big). TF32 keeps 10 of fp32's 23
// mantissa bits, so big alone is off by up to 2^-11 of v (v12's error, ~3e-4 on a layer); v - big
// is exact in fp32, and its TF32 rounding leaves an error of about 2^-22 of v, fp32's own scale.
// A product is then
//   x * w = (xb + xs)(wb + ws) = xb*wb + xb*ws + xs*wb + xs*ws
// and the last term (about 2^-22 of the product) is dropped: three TF32 products instead of one
// fp32 multiply-add, each exact in the fp32 sums. The tensor cores multiply TF32 at about 8x the
// fp32 rate of the CUDA cores on this card, so three of them still beat one FFMA.
// What changes from v12:
//   1. conv2d_v13_to_channels_last (below) writes both parts: big into the first half of the
//      copy, small into the second half, x_part (w_part) values further on;
//   2. a stage holds both parts of both operands: 256 bytes of shared memory a row instead of
//      128. 128 x 128 tiles keep 3 stages (192 KB), 64 x 128 tiles 4 (192 KB); one block an SM;
//   3. each k-step issues three wgmma into the same sums, the two small products first (the
//      sums of the small terms are then not rounded away against the large ones' running sum).
//   4. every `promote` stages (the host passes 2) the loop waits for the tensor cores, adds their
//      sums into fp32 registers (`total`) and starts them afresh (wgmma's scale-d = 0).
// Unchanged: v12's copies into swizzled shared memory, the wgmma pipeline, split K and the
// write-back. The results are not bit for bit those of an fp32 kernel (each term's error is a
// few units of fp32's last place instead of half of one; the sums are fp32 either way).
// Measured (H100, bench.suite at eef70eb, two runs in one lease, ms, our fp32 auto before v13 ->
// v13 (cuDNN fp32)): VGG-like 0.96-0.99 -> 0.440 / 0.446 (0.757 / 0.729); 1x1 0.18-0.19 -> 0.137 /
// 0.134 (0.130 / 0.135); 5x5 0.34-0.35 -> 0.146 / 0.149 (0.189 / 0.177); grouped g=4 0.56-0.57 ->
// 0.397 / 0.399 (0.368 / 0.363); late 14x14x256 0.38-0.42 -> 0.142 / 0.140 (0.184 / 0.185);
// 7x7x512 0.37-0.39 -> 0.163 / 0.183 (0.307 / 0.309); 7x7x1024 0.62 -> 0.312 / 0.301 (0.697 /
// 0.663); resnet56 0.204 / 0.193 (0.252 / 0.257); stride 2 0.199 / 0.192 (0.261 / 0.257).
// Error against float64, ||y - y64|| / ||y64||: 4.4-4.8e-7 (v4 in fp32: 2.9e-7 to 1.6e-6). The
// sums never moved out of the tensor cores measured 2.3e-6 to 1.8e-5 (max error, of the largest
// output) at -5% to +10% of the time: their additions along k round less carefully than fp32's.
// =======================================================================================
#define X3_STAGES_128 3     // v13's shared-memory stages, 128 x 128 tile
#define X3_STAGES_64 4      // 64 x 128 tile

// x -> x_cl (2, N, Hp, Wp, C) and w -> w_cl (2, M, KH, KW, Cg): [0] the TF32 part of every value,
// [1] the TF32 part of what it leaves, x_part (w_part) values on. Grid, block and thread map as
// v10's copy (both arrays in one launch).
extern "C" __global__ void __launch_bounds__(256) conv2d_v13_to_channels_last(
    const float* __restrict__ w, float* __restrict__ w_cl, const float* __restrict__ x, float* __restrict__ x_cl,
    int N, int C, int H, int W, int Hp, int Wp, int pad_h, int pad_w, int reflect,
    int M, int Cg, int KH, int KW, int x_blocks, long long x_part, long long w_part)
{
    copy_x_and_w(x, w, N, C, H, W, Hp, Wp, pad_h, pad_w, reflect, M, Cg, KH, KW, x_blocks,
                 [&](bool of_x, long long o, float v) {
                     const float big = __uint_as_float(to_tf32(v));
                     const float small = __uint_as_float(to_tf32(v - big));   // v - big is exact in fp32
                     if (of_x) {
                         store(x_cl, o, big);
                         store(x_cl, o + x_part, small);
                     } else {
                         w_cl[o] = big;
                         w_cl[o + w_part] = small;
                     }
                 });
}

// The kernels of v13: x_cl and w_cl from conv2d_v13_to_channels_last (x_part and w_part: the
// values from a part's start to the other's). Tiles as v12's.
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v13_3xtf32_128x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    long long x_part, long long w_part, int promote)
{
    warpgroup_conv<128, 128, PREC_TF32, 2, X3_STAGES_128>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, x_part, w_part,
        promote);
}
extern "C" __global__ void __launch_bounds__(128, 1) conv2d_v13_3xtf32_64x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    long long x_part, long long w_part, int promote)
{
    warpgroup_conv<64, 128, PREC_TF32, 2, X3_STAGES_64>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, x_part, w_part,
        promote);
}

// =======================================================================================
// v14 PIXELS AS THE TENSOR CORES' ROWS = v12 (TF32) / v13 (3xTF32) with wgmma's operands swapped.
// wgmma's A operand always has 64 rows (m64); its B operand has N columns, any multiple of 8 up
// to 256. v12 and v13 put the filters on the rows: where a group has 32 filters (a grouped
// layer, the gradient of a 5x5 layer with 32 input channels) half of every row tile is zeros,
// and the tensor cores spend half their time on them. v14 puts 64 PIXELS on the rows (A) and
// the group's filters on the columns (B, N = 32 or 64), so no row is empty. What changes:
//   1. the block: BM = 32 or 64 filters x BN = 64 or 128 pixels, a warpgroup per 64 pixels;
//   2. the descriptors: A is this warpgroup's 64 pixel rows of the stage, B the filter rows. The
//      stage itself is unchanged: both operands are K-major rows of 128 bytes in the same
//      swizzled 1 KB atoms, so the copies and the descriptor format are v12's;
//   3. the instruction: wgmma m64n32k8 (or m64n64k8) in TF32; sums: 16 (32) registers a thread;
//   4. the write-back (store_pixel_rows): a lane's sums now belong to two pixels and 2 x N/8
//      filters, which lie L apart in y: one 4-byte store each (v12 wrote pairs of pixels).
// Unchanged: the pipeline, split K, and in 3xTF32 v13's pairs, three products a k-step and the
// sums moved to fp32 registers every X3_PROMOTE stages (error as v13's).
// What to expect: a k-step of m64n32k8 reads 2 KB of A and 1 KB of B from shared memory for
// 64 x 32 sums; v12's m64n128k8 reads 2 + 4 KB for 64 x 128 of which 32 x 128 count. Shared
// memory moves the same bytes per useful sum either way (at 128 bytes a clock, 24 clocks for
// 64 x 32 x 8 against 48 for v12's half-empty 64 x 128 x 8), while the tensor cores' time per
// useful sum halves (16 clocks against 64 at TF32's 1,024 multiply-adds a clock an SM): up to
// 1.3x on the GEMM where groups have 32 filters, nothing where they have 64 (v12's rows are full
// there, and m64n64k8 is no faster per sum). Measured (H100, two runs in one lease, ms, the
// copies included): grouped g=4 in 3xTF32 v13 0.429 / 0.404 -> v14 0.299 / 0.279 (cuDNN fp32
// 0.385 / 0.366), in TF32 v12 0.212 / 0.202 -> 0.191 / 0.185; 5x5 (k5) 3xTF32 0.166 / 0.165 ->
// 0.152 / 0.149. More than predicted on grouped: its two blocks an SM overlap one's short
// pipeline (9 stages) with the other's. Where groups have 64+ filters v14 is slower (VGG-like
// 3xTF32 0.437 -> 0.502): auto measures it only where a group has at most 64 filters.
// Pixel rows through L1 (x_via_l1, TF32): where a group has 32 channels a stage is a whole tap,
// and the next stage (the next tap along the row) reads the same pixel rows one cell on: 127 of
// a block's 128. The copies that bring them (cp_async16_l1, .ca) then leave them in L1 for it;
// elsewhere (.cg) only in L2, as before. Measured on the H100 (one lease, three rounds of 30
// queued calls, ms, whole calls, .cg / .ca): 5x5 with 32 channels 0.0579 / 0.0558, grouped g=4
// (32 x 128 tile) 0.147 / 0.144; where a tap takes several stages it does not pay: 64 channels
// (resnet56) 0.0792 / 0.0791, 256 (late 14x14) 0.057 / 0.066. In 3xTF32 5x5 0.1136 / 0.1142, so
// v14 in 3xTF32 keeps .cg; the filter rows through L1 too were slower on every layer.
// =======================================================================================
// Tiles (the host's pixel_rows_tile): 64 x 128 where a group has more than 32 filters; else in
// TF32 32 x 128 (80 KB of stages, two blocks an SM), in 3xTF32 32 x 64 (stages twice as large:
// 96 KB, two blocks an SM, where 32 x 128 would hold one). A grouped layer's block has few
// stages of k (9 on the 3x3 layer of 32 channels a group): a second block on the SM keeps the
// tensor cores busy while one fills its pipeline and writes its sums back.
#define V14_STAGES 4         // TF32: 48, 80 or 96 KB a block (32 x 64, 32 x 128, 64 x 128)
#define V14_X3_STAGES 4      // 3xTF32: 96, 160 or 192 KB

// The kernels of v14: TF32 on v10's copies, 3xTF32 on v13's; named by the block's filters x pixels.
extern "C" __global__ void __launch_bounds__(128, 4) conv2d_v14_tf32_32x64(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    int x_via_l1)
{
    warpgroup_conv<32, 64, PREC_TF32, 1, V14_STAGES, true>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, 0, 0, 0, x_via_l1);
}
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v14_tf32_32x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    int x_via_l1)
{
    warpgroup_conv<32, 128, PREC_TF32, 1, V14_STAGES, true>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, 0, 0, 0, x_via_l1);
}
extern "C" __global__ void __launch_bounds__(256, 2) conv2d_v14_tf32_64x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    int x_via_l1)
{
    warpgroup_conv<64, 128, PREC_TF32, 1, V14_STAGES, true>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out,
        stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, 0, 0, 0, x_via_l1);
}
extern "C" __global__ void __launch_bounds__(128, 2) conv2d_v14_3xtf32_32x64(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    long long x_part, long long w_part, int promote)
{
    warpgroup_conv<32, 64, PREC_TF32, 2, V14_X3_STAGES, true>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out,
        W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, x_part,
        w_part, promote);
}
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v14_3xtf32_32x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    long long x_part, long long w_part, int promote)
{
    warpgroup_conv<32, 128, PREC_TF32, 2, V14_X3_STAGES, true>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out,
        W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, x_part,
        w_part, promote);
}
extern "C" __global__ void __launch_bounds__(256, 1) conv2d_v14_3xtf32_64x128(
    const float* __restrict__ x_cl, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int k_splits, int Hp, int Wp,
    long long x_part, long long w_part, int promote)
{
    warpgroup_conv<64, 128, PREC_TF32, 2, V14_X3_STAGES, true>(x_cl, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out,
        W_out, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups, reflect, m_blocks, k_splits, Hp, Wp, x_part,
        w_part, promote);
}

// =======================================================================================
// v16 1x1 LAYERS FROM NCHW, THE PIXELS FROM REGISTERS = v14 (pixels on wgmma's rows) for a 1x1
// layer of stride 1 without padding, with wgmma's A operand (the pixels) taken from registers
// instead of shared memory. On such a layer the GEMM reads the input itself: y[n][m][l] = sum
// over c of w[m][c] * x[n][c][l], pixels l on wgmma's rows (A), filters m on its columns (B). wgmma
// reads TF32 operands from shared memory only K-major (a row of k values per pixel), but NCHW
// holds a row of PIXELS per channel, so v12 and v14 copy x to channels last first: on the
// 32 x 256 x 28 x 28 layer that copy moves as many bytes as the GEMM itself (H100: v12 0.065 ms
// with its copies, cuDNN-TF32 0.029). From registers, A may come in any layout: each thread
// loads its own fragment. What changes:
//   1. the x tile of a stage is 32 channels x 128 pixels as NCHW holds them: a channel's pixels
//      are consecutive (1x1, stride 1, no padding), so 16-byte cp.async of 4 pixels fill it
//      straight from x, no gather and no copy kernel (the host checks that L % 4 == 0: a 4-pixel
//      run never straddles two samples);
//   2. before each k-step a thread loads its fragment of its warp's 16 pixels x 8 channels (the
//      layout mma.sync's m16n8k8 uses: pixel g and g + 8, channels t and t + 4 of lane 4g + t)
//      from that tile and rounds it to TF32 on the way (to_tf32_even). The tile's rows are 136 floats
//      apart (8 more than 128): lane 4g + t then reads bank (8t + g) % 32, all 32 different;
//   3. wgmma's A operand is those 4 registers; its B operand, the filters, stays in shared
//      memory as v12's swizzled 128-byte rows (w of a 1x1 layer is already K-major: a filter's
//      channels are consecutive). The copies write w as it is; each thread then rounds the chunks
//      it copied to TF32 in place before the barrier that hands the stage to the tensor cores;
//   4. wgmma may read its A registers until the wait that retires it, and ptxas serializes all
//      wgmma of a kernel (each waits for the one before: warning C7513) where registers a wgmma
//      reads are written while earlier ones run. So a stage waits for its own wgmma before the
//      next stage's fragments are loaded; the other warpgroup and the other block on the SM keep
//      the tensor cores busy meanwhile. (The first v16 kept the next stage's fragments in a
//      second register set instead and was serialized: 0.039 / 0.026 / 0.030 ms on the first,
//      second and last layers below, 0.038 / 0.024 / 0.028 with this wait; the others level.)
// Unchanged: 4 stages with two stages' copies loading, the sums (16 pixels x 64 filters a warp)
// and their write-back (store_pixel_rows), no split K.
// The block: 64 filters (m64n64k8) x 128 pixels, two blocks an SM. Measured on the H100 (one
// lease, two rounds of 30 queued calls, ms; 64 x 128 / a 128 x 128 try (m64n128k8, one block an
// SM) / v12 with its copies / cuDNN-TF32): 32x256x28x28 -> 256 0.039 / 0.041 / 0.065 / 0.032;
// 16x512x14x14 -> 512 0.025 / 0.024 / 0.040 / 0.023; 32x64x56x56 -> 256 0.080 / 0.086 / 0.117 /
// 0.059; 32x256x56x56 -> 64 0.052 / 0.071 / 0.154 / 0.055; 32x128x28x28 -> 512 0.049 / 0.052 /
// 0.066 / 0.043; 16x1024x14x14 -> 256 0.030 / 0.040 / 0.043 / 0.024. The 64-filter block won
// on five of six, so it is the only one. Rounding x with to_tf32_even instead of cvt.rna (as
// v17; H100, four rounds of 40 calls, ms, before / after): 32x256x28x28 0.0369 / 0.0363,
// 32x64x56x56 0.0798 / 0.0791, 16x512x14x14 g=4 0.0186 / 0.0186.
// =======================================================================================
#define V16_STAGES 4          // shared-memory stages
#define V16_FILTERS 64        // a block's filters: wgmma's N
#define V16_PIXELS 128        // a block's pixels: two warpgroups of 64
#define V16_KC 32             // channels a stage (a filter row of 128 bytes)
#define V16_PITCH (V16_PIXELS + 8)   // floats from one channel's pixels to the next one's in the x tile

// One wgmma of 64 pixels (A: 4 registers a thread) x N filters (B: descriptor) x 8 channels,
// TF32; v16 issues N = 64, v17 N = 32 or 64.
template <int N>
__device__ __forceinline__ void wgmma_rs_64xN(float (&d)[N / 8][4], const unsigned (&a)[4], unsigned long long b) {
    static_assert(N == 32 || N == 64, "the shapes v16 and v17 issue");
    if constexpr (N == 32)
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 {" WG_REGS16 "}, "
                     "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
                     : WG_D16 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
    else
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" WG_REGS32 "}, "
                     "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                     : WG_D32 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}

// The kernel of v16: 64 filters x 128 pixels a block, two blocks an SM (101 KB of stages each).
extern "C" __global__ void __launch_bounds__(2 * V16_PIXELS, 2) conv2d_v16_pointwise_tf32(
    const float* __restrict__ x, const float* __restrict__ w, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int L, int groups, int m_blocks)
{
    constexpr int THREADS = 2 * V16_PIXELS;                  // a warpgroup per 64 pixels
    constexpr int F_BYTES = V16_FILTERS * WG_ROW_BYTES;      // the filter rows: v12's swizzled layout
    constexpr int X_BYTES = V16_KC * V16_PITCH * 4;          // the x tile: 32 channels x 136 floats
    constexpr int STAGE_BYTES = F_BYTES + X_BYTES;           // a multiple of 1 KB: every filter tile
    constexpr int F_ROWS = THREADS / 8;                      // starts on a 1 KB boundary
    constexpr int F_PASSES = V16_FILTERS / F_ROWS;
    constexpr int X_RUNS = V16_PIXELS / 4;                   // 16-byte runs along a channel's pixels
    constexpr int X_ROWS = THREADS / X_RUNS;                 // channels one pass of the block copies
    static_assert(STAGE_BYTES % WG_ATOM_BYTES == 0 && V16_FILTERS % F_ROWS == 0, "tile layout");

    extern __shared__ unsigned char wg_smem_raw[];
    unsigned char* smem = wg_smem_raw + ((WG_ATOM_BYTES - static_cast<unsigned>(
        __cvta_generic_to_shared(wg_smem_raw)) % WG_ATOM_BYTES) % WG_ATOM_BYTES);

    const int t = threadIdx.x, warpgroup = t / 128, warp = (t / 32) % 4, lane = t % 32;
    const int Cg = C / groups, Mg = M / groups, P = N * L;   // P < 2^31: the host checks
    const int g = blockIdx.y / m_blocks;
    const int m0 = (blockIdx.y % m_blocks) * V16_FILTERS;    // first filter of the block, within the group
    const int p0 = blockIdx.x * V16_PIXELS;                  // first pixel of the block
    const int tiles = Cg / V16_KC;                           // Cg % 32 == 0: the host checks

    // the filter copies, as v12's: chunk t % 8 of rows t / 8 + i * F_ROWS, to its swizzled place
    const int chunk = t % 8, f_row = t / 8;
    const int f_dst = f_row * WG_ROW_BYTES + ((chunk ^ (f_row % 8)) * 16);
    const float* w_src[F_PASSES];
    bool w_ok[F_PASSES];
#pragma unroll
    for (int i = 0; i < F_PASSES; ++i) {
        const int m = m0 + f_row + i * F_ROWS;
        w_ok[i] = m < Mg;
        w_src[i] = w + (long long)(g * Mg + (w_ok[i] ? m : 0)) * Cg + chunk * 4;
    }
    // the x copies: run t % 32 (pixels 4r .. 4r + 3 of the block) of channels t / 32 + 8i
    const int run = t % X_RUNS, x_row = t / X_RUNS;
    const int p = p0 + 4 * run;
    const bool x_ok = p < P;                                 // P % 4 == 0: a run is all in or all out
    const int n = x_ok ? p / L : 0, l = x_ok ? p % L : 0;
    const float* x_src = x + ((long long)n * C + g * Cg + x_row) * L + l;

    auto load_stage = [&](int tile) {
        unsigned char* stage = smem + (tile % V16_STAGES) * STAGE_BYTES;
        const int k0 = tile * V16_KC;
#pragma unroll
        for (int i = 0; i < F_PASSES; ++i)
            cp_async16(reinterpret_cast<float*>(stage + f_dst + i * F_ROWS * WG_ROW_BYTES), w_src[i] + k0, w_ok[i]);
        float* x_tile = reinterpret_cast<float*>(stage + F_BYTES);
#pragma unroll
        for (int i = 0; i < V16_KC / X_ROWS; ++i)
            cp_async16(x_tile + (x_row + i * X_ROWS) * V16_PITCH + 4 * run,
                       x_src + (long long)(k0 + i * X_ROWS) * L, x_ok);
        asm volatile("cp.async.commit_group;\n" ::);
    };
    // this thread's filter chunks of a landed stage, rounded to TF32 where they lie
    auto round_filters = [&](int tile) {
        unsigned char* stage = smem + (tile % V16_STAGES) * STAGE_BYTES;
#pragma unroll
        for (int i = 0; i < F_PASSES; ++i) {
            float4* c = reinterpret_cast<float4*>(stage + f_dst + i * F_ROWS * WG_ROW_BYTES);
            float4 v = *c;
            v.x = __uint_as_float(to_tf32(v.x));
            v.y = __uint_as_float(to_tf32(v.y));
            v.z = __uint_as_float(to_tf32(v.z));
            v.w = __uint_as_float(to_tf32(v.w));
            *c = v;
        }
    };

    float acc[V16_FILTERS / 8][4];
#pragma unroll
    for (int j = 0; j < V16_FILTERS / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
    const int gr = lane / 4, tq = lane % 4;
    const int a_row = warpgroup * 64 + warp * 16 + gr;       // this lane's first pixel of the tile

    // one stage: wait for its copies, hand it to the tensor cores, load its fragments, issue its
    // 4 wgmma and wait for them
    auto step = [&](int tile) {
        asm volatile("cp.async.wait_group %0;\n" :: "n"(V16_STAGES - 3));  // my copies of `tile` landed
        round_filters(tile);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");    // ... visible to the tensor cores
        __syncthreads();      // everyone's copies landed; every warpgroup's wgmma of tile - 1 finished
        if (tile + V16_STAGES - 2 < tiles) load_stage(tile + V16_STAGES - 2);
        else asm volatile("cp.async.commit_group;\n" ::);
        const unsigned char* stage = smem + (tile % V16_STAGES) * STAGE_BYTES;
        const float* x_tile = reinterpret_cast<const float*>(stage + F_BYTES);
        unsigned a[4][4];
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) {                     // channels 8kk + tq (+4), pixels a_row (+8)
            const float* k_row = x_tile + (8 * kk + tq) * V16_PITCH + a_row;
            a[kk][0] = to_tf32_even(k_row[0]);
            a[kk][1] = to_tf32_even(k_row[8]);
            a[kk][2] = to_tf32_even(k_row[4 * V16_PITCH]);
            a[kk][3] = to_tf32_even(k_row[4 * V16_PITCH + 8]);
        }
        const unsigned long long b = wgmma_descriptor(stage);
        wgmma_hold(acc);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) wgmma_rs_64xN<V16_FILTERS>(acc, a[kk], b + 2 * kk);  // +32 bytes of k a step
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        wgmma_hold(acc);
    };

#pragma unroll
    for (int s = 0; s < V16_STAGES - 2; ++s) {               // the pipeline fills
        if (s < tiles) load_stage(s);
        else asm volatile("cp.async.commit_group;\n" ::);
    }
    for (int tile = 0; tile < tiles; ++tile) step(tile);
    store_pixel_rows<V16_FILTERS / 8>(acc, y, bias, M, Mg, g, L, P, p0 + warpgroup * 64 + warp * 16, m0, 1);
}

// =======================================================================================
// v17 WINDOWS FROM NCHW: A HALO TILE, THE TAPS AS REGISTER OFFSETS = v16 (x read as it lies,
// the pixels given to wgmma from registers) for KH x KW windows at stride 1. v14 copies all of
// x to channels last, then gathers a row of channels for every pixel and every tap: on the
// grouped 3x3 layer (32 channels a group) a block of 128 pixels brings 9 x 16 KB of pixel rows
// into shared memory, 8 of every 9 values already brought for a neighbour's tap. What changes:
//   1. a block's 128 pixels lie in one sample (blocks along x: sample by sample, ceil(L / 128)
//      each), so they cover a few consecutive output rows. Its stage is a HALO TILE of 32
//      channels: the input rows under those output rows and the (KH - 1) * dil_h rows below,
//      whole rows as NCHW holds them (16-byte cp.async; the host checks W % 4 == 0), input
//      column iw at tile column V17_COL0 + iw. The columns left and right of the plane and the
//      rows above and below it are copied as zeros (cp.async of 0 bytes): the zero padding.
//      Each value comes in once a block, whatever the window;
//   2. beside it, every tap's filter rows for those 32 channels, each tap's BM rows a swizzled
//      tile as in v12, from w_cl (TF32, [M][tap][Cg]: v10's copy kernel, on w only);
//   3. tap (r, s) of output pixel (oh, ow) reads tile cell (oh - oh_first + r * dil_h, ow +
//      s * dil_w - pad_w + V17_COL0). A tap is 4 k-steps of 8 channels: the lane loads and
//      rounds its m16n8k8 fragment (channels t, t + 4; pixels g, g + 8) and the warpgroup issues
//      wgmma with A from registers and that tap's filter tile as B. The lane computes where its
//      16 fragment values of tap (0, 0) lie once (frag: byte offsets), and a tap adds one offset
//      the warpgroup shares: each load is one instruction, no address arithmetic;
//   4. a warpgroup loads the fragments of V17_TAPS taps, issues their 12 wgmma and waits for
//      them before it loads more: ptxas serializes every wgmma of a kernel (warning C7513)
//      where registers one reads are written while earlier ones run. The other warpgroup and
//      the other block on the SM keep the tensor cores busy meanwhile;
//   5. one stage where a group has 32 channels; where it has more, two if they fit. Channel
//      rows are channel_pitch floats apart, 8 or 24 more than a multiple of 32: the 4 channels
//      of a fragment load fall in different banks;
//   6. the host launches it as a programmatic dependent of the copy of w (the copy's blocks
//      run griddepcontrol.launch_dependents first thing): its blocks start while the copy
//      runs, issue their first halo tile, then wait (griddepcontrol.wait: the copy has
//      finished, its writes visible) before they copy any filter row. Launched plainly, the
//      wait returns at once. Measured on the H100 (one lease, three rounds of 40 queued calls,
//      ms; copy + v17 plain / dependent / v17 alone): grouped g=4 0.127 / 0.124 / 0.123, g=8
//      0.0716 / 0.0691 / 0.0674, 16x32x112x112 0.0719 / 0.0688 / 0.0678.
// Unchanged: wgmma (n32 or n64, TF32), the sums and their write-back (store_pixel_rows), no
// split K. Measured on the H100 (one lease, two rounds of 30 queued calls, ms; v17 with its copy
// of w / v14 with its copies / cuDNN-TF32): grouped g=4 32x128x56x56 0.127 / 0.154 / 0.164, g=8
// 32x256x28x28 0.072 / 0.086 / 0.089, 16x32x112x112 -> 32 0.069 / 0.083 / 0.093; with 64
// filters, one block an SM: resnet56 0.114 / 0.084 / 0.096; 5x5 in groups of 32 (170 KB of
// stages) 0.175 / 0.147 / 0.233. So pipelined_tf32 runs it on groups of at most 32 filters.
// Steps on the way, grouped g=4: one tap's fragments at a time with the next tap's loaded while
// it ran (serialized by ptxas) 0.141; blocks that loop over tiles with two stages (one block an
// SM) 0.18; V17_TAPS = 1 / 2 / 3 / 5 0.145 / 0.148 / 0.135 / 0.144 (kernel alone), then the halo
// copy without divisions 0.127 with the copy of w. Tried after it and reverted (bench/NOTES.md):
// the filter rows brought one window row at a time (64 filters and 5x5 windows at two blocks an
// SM; a barrier a row): grouped 0.149, resnet56 0.098, k5 0.065, all behind; the halo rounded to
// TF32 once when it lands instead of at each fragment load: grouped 0.135.
// Then its bookkeeping, found with Nsight Compute (grouped g=4: 75.0M warp instructions, 2.8 a
// cycle; the 16 loads and 16 roundings of a tap were a third of them, and the copies' index
// arithmetic another third: 42 instructions around each 16-byte halo copy, 30 around each
// filter copy): the copies now step pointers (each thread keeps its column of runs and its
// filter rows, and walks rows x its channels, taps x its rows), the fragment offsets are
// computed once (3. above), and x is rounded with to_tf32_even, one instruction where cvt.rna
// is three. 51.8M instructions. Measured (H100, one lease, four rounds of 40 queued calls, ms,
// with the copy of w; before / after / cvt.rna kept): grouped g=4 0.124 / 0.096 / 0.103, g=8
// 32x256x28x28 0.069 / 0.055 / 0.060, 16x32x112x112 0.068 / 0.057 / 0.060, 16x512x56x56 g=16
// 0.233 / 0.177 / 0.191; fp32 auto on grouped g=4 0.250, cuDNN-TF32 0.163.
// =======================================================================================
#define V17_PIXELS 128        // a block's pixels: two warpgroups of 64, all in one sample
#define V17_KC 32             // channels a stage: a filter row of 128 bytes a tap
#define V17_COL0 4            // the tile column of input column 0; columns 0..3: left padding
#define V17_TAPS 3            // taps whose fragments a warpgroup loads before it issues their wgmma

template <int BM>
__device__ __forceinline__ void halo_conv(
    const float* __restrict__ x, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int pad_h, int pad_w, int dil_h,
    int dil_w, int groups, int m_blocks, int l_tiles, int rows_in, int row_pitch, int channel_pitch, int stages)
{
    constexpr int THREADS = 2 * V17_PIXELS;                  // a warpgroup per 64 pixels
    constexpr int F_ROWS = THREADS / 8;                      // filter rows one pass copies (8 chunks a row)
    const int taps = KH * KW;
    const int f_bytes = taps * BM * WG_ROW_BYTES;            // each tap's BM filter rows: a multiple of 1 KB
    const int stage_bytes = (f_bytes + 4 * V17_KC * channel_pitch + WG_ATOM_BYTES - 1) / WG_ATOM_BYTES * WG_ATOM_BYTES;

    extern __shared__ unsigned char wg_smem_raw[];
    unsigned char* smem = wg_smem_raw + ((WG_ATOM_BYTES - static_cast<unsigned>(
        __cvta_generic_to_shared(wg_smem_raw)) % WG_ATOM_BYTES) % WG_ATOM_BYTES);

    const int t = threadIdx.x, warpgroup = t / 128, warp = (t / 32) % 4, lane = t % 32;
    const int Cg = C / groups, Mg = M / groups, L = H_out * W_out, Kp = taps * Cg;
    const int n = blockIdx.x / l_tiles;                      // the block's sample
    const int l0 = (blockIdx.x % l_tiles) * V17_PIXELS;      // its first pixel in that sample's plane
    const int g = blockIdx.y / m_blocks;
    const int m0 = (blockIdx.y % m_blocks) * BM;             // first filter of the block, within the group
    const int tiles = Cg / V17_KC;                           // Cg % 32 == 0: the host checks
    const int ih0 = l0 / W_out - pad_h;                      // the input row of the tile's row 0
    const float* x_group = x + ((long long)n * C + g * Cg) * H * W;

    // the filter copies: chunk t % 8 of filter rows m0 + t / 8 (+ F_ROWS where BM is 64) of every
    // tap, each to its swizzled place in its tap's tile (a tile starts on 1 KB: swizzle row t / 8 % 8)
    constexpr int F_PASSES = BM / F_ROWS;
    const int chunk = t % 8;
    const int f_dst = (t / 8) * WG_ROW_BYTES + ((chunk ^ (t / 8 % 8)) * 16);
    const float* w_src[F_PASSES];
    bool w_ok[F_PASSES];
#pragma unroll
    for (int i = 0; i < F_PASSES; ++i) {
        const int m = m0 + t / 8 + i * F_ROWS;
        w_ok[i] = m < Mg;
        w_src[i] = w_cl + (long long)(g * Mg + (w_ok[i] ? m : 0)) * Kp + 4 * chunk;
    }
    auto load_filters = [&](int tile) {
        unsigned char* stage = smem + (tile % stages) * stage_bytes;
        for (int tap = 0; tap < taps; ++tap) {
            unsigned char* tap_tile = stage + tap * BM * WG_ROW_BYTES;
            const int k = tap * Cg + tile * V17_KC;          // the stage's first channel of the tap
#pragma unroll
            for (int i = 0; i < F_PASSES; ++i)
                cp_async16(reinterpret_cast<float*>(tap_tile + f_dst + i * F_ROWS * WG_ROW_BYTES), w_src[i] + k, w_ok[i]);
        }
    };

    // the halo copies: thread t moves 16-byte run t % runs of its row (its column, fixed) for
    // channels t / runs, + per_pass, ... of every input row of the tile. The host checks
    // runs <= THREADS: every run of a row has its thread
    const int runs = row_pitch / 4, per_pass = THREADS / runs;
    const int run = t % runs, c_first = t < per_pass * runs ? t / runs : V17_KC;  // past it: idle
    const int iw = 4 * run - V17_COL0;                       // the run's input column
    const bool column_in = iw >= 0 && iw < W;                // else zeros: the left / right padding
    const long long pass_step = (long long)per_pass * H * W;  // x's offset from a channel to c + per_pass
    const float* x_run = x_group + (long long)min(c_first, V17_KC - 1) * H * W + (column_in ? iw : 0);  // idle: any

    auto load_halo = [&](int tile) {
        float* x_tile = reinterpret_cast<float*>(smem + (tile % stages) * stage_bytes + f_bytes);
        const float* x_rows = x_run + (long long)tile * V17_KC * H * W;
        for (int j = 0; j < rows_in; ++j) {                  // tile row j: input row ih0 + j
            const int ih = ih0 + j;
            const bool ok = column_in && ih >= 0 && ih < H;   // else zeros: the padding
            const float* src = x_rows + (ok ? (long long)ih * W : 0);
            float* dst = x_tile + c_first * channel_pitch + j * row_pitch + 4 * run;
            for (int c = c_first; c < V17_KC; c += per_pass, src += pass_step, dst += per_pass * channel_pitch)
                cp_async16(dst, src, ok);
        }
    };
    auto load_stage = [&](int tile) {
        load_filters(tile);
        load_halo(tile);
        asm volatile("cp.async.commit_group;\n" ::);
    };

    float acc[BM / 8][4];
#pragma unroll
    for (int j = 0; j < BM / 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[j][e] = 0.0f;
    const int gr = lane / 4, tq = lane % 4;
    const int a_row = warpgroup * 64 + warp * 16 + gr;       // the lane's first pixel of the tile
    // the lane's fragment values for tap (0, 0), as byte offsets into the halo tile: value e of
    // k-step kk is channel 8kk + tq (+4 for e >= 2) of pixel g (+8 for odd e), at the pixel's
    // tile cell. Any other tap is the same 16 offsets plus one the warpgroup shares (3. above)
    unsigned frag[4][4];
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        const int l = min(l0 + a_row + 8 * (e % 2), L - 1);  // past the plane: any cell, never stored
        const int cell = (l / W_out - l0 / W_out) * row_pitch + l % W_out - pad_w + V17_COL0;
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) frag[kk][e] = 4 * ((8 * kk + tq + 4 * (e / 2)) * channel_pitch + cell);
    }

    // taps (r, s0 .. s0 + V17_TAPS - 1) of a landed stage: load all their fragments, then issue
    // their wgmma and wait for them. (ptxas serializes every wgmma of a kernel where registers
    // they read are written while earlier wgmma run: the next fragments wait for this wait.)
    auto tap_group = [&](const unsigned char* stage, int r, int s0) {
        unsigned a[V17_TAPS][4][4];
#pragma unroll
        for (int i = 0; i < V17_TAPS; ++i) {
            const int s = min(s0 + i, KW - 1);               // past the row: loaded, not multiplied
            const unsigned char* x_tap = stage + f_bytes + 4 * (r * dil_h * row_pitch + s * dil_w);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
#pragma unroll
                for (int e = 0; e < 4; ++e) a[i][kk][e] = to_tf32_even(*reinterpret_cast<const float*>(x_tap + frag[kk][e]));
        }
        wgmma_hold(acc);
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int i = 0; i < V17_TAPS; ++i) {
            if (s0 + i < KW) {
                const int tap = r * KW + s0 + i;
                const unsigned long long b = wgmma_descriptor(stage + tap * BM * WG_ROW_BYTES);
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) wgmma_rs_64xN<BM>(acc, a[i][kk], b + 2 * kk);  // +32 bytes of k
            }
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        wgmma_hold(acc);
    };

    // the first stage: x's tile first, as the copy of w may still be running (6. above)
    load_halo(0);
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    load_filters(0);
    asm volatile("cp.async.commit_group;\n" ::);
    for (int tile = 0; tile < tiles; ++tile) {
        const bool ahead = stages > 1 && tile + 1 < tiles;   // two stages: the next one loads meanwhile
        if (ahead) load_stage(tile + 1);
        if (ahead) asm volatile("cp.async.wait_group 1;\n" ::);   // my copies of `tile` landed
        else asm volatile("cp.async.wait_group 0;\n" ::);
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");    // ... visible to the tensor cores
        __syncthreads();                                     // everyone's copies landed
        const unsigned char* stage = smem + (tile % stages) * stage_bytes;
        for (int r = 0; r < KH; ++r)
            for (int s0 = 0; s0 < KW; s0 += V17_TAPS) tap_group(stage, r, s0);
        __syncthreads();                                     // nobody reads the stage any more
        if (stages == 1 && tile + 1 < tiles) load_stage(tile + 1);
    }
    store_pixel_rows<BM / 8>(acc, y, bias, M, Mg, g, L, (n + 1) * L, n * L + l0 + a_row - gr, m0, 1);
}

// The kernels of v17, named by the block's filters x pixels (the host picks 32 x 128 where a
// group has at most 32 filters). They take every conv2d kernel's geometry; the host runs them
// at stride 1 with zero padding of at most V17_COL0 columns a side.
extern "C" __global__ void __launch_bounds__(2 * V17_PIXELS, 2) conv2d_v17_halo_tf32_32x128(
    const float* __restrict__ x, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int l_tiles, int rows_in,
    int row_pitch, int channel_pitch, int stages)
{
    halo_conv<32>(x, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, pad_h, pad_w, dil_h, dil_w, groups,
                  m_blocks, l_tiles, rows_in, row_pitch, channel_pitch, stages);
}
extern "C" __global__ void __launch_bounds__(2 * V17_PIXELS, 1) conv2d_v17_halo_tf32_64x128(
    const float* __restrict__ x, const float* __restrict__ w_cl, const float* __restrict__ bias, float* __restrict__ y,
    int N, int C, int M, int H, int W, int KH, int KW, int H_out, int W_out, int stride_h, int stride_w,
    int pad_h, int pad_w, int dil_h, int dil_w, int groups, int reflect, int m_blocks, int l_tiles, int rows_in,
    int row_pitch, int channel_pitch, int stages)
{
    halo_conv<64>(x, w_cl, bias, y, N, C, M, H, W, KH, KW, H_out, W_out, pad_h, pad_w, dil_h, dil_w, groups,
                  m_blocks, l_tiles, rows_in, row_pitch, channel_pitch, stages);
}
