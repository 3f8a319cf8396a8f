// A tiled matrix multiplication C = A * B (row-major, M x K times K x N), tuned from Python:
// see examples/handwritten/tune_matmul.py. Its parameters arrive as -D build options:
//   TS   the tile size: a work-group computes a TS x TS block of C
//   WPT  work per thread: each work-item computes WPT rows of its block's column
//        (the work-group is TS x TS/WPT work-items)
//   VW   the width of the vector loads of B's tile (1, 2 or 4)
// Like CLTune's GEMM example: M, N and K must be multiples of TS.
#ifndef VW
#define VW 1
#endif

__kernel void gemm(const int M, const int N, const int K,
                   __global const float* A, __global const float* B, __global float* C)
{
    const int col = get_local_id(0);          // 0..TS-1
    const int row = get_local_id(1);          // 0..TS/WPT-1
    const int gcol = get_group_id(0) * TS + col;
    const int grow = get_group_id(1) * TS + row;
    __local float As[TS][TS];
    __local float Bs[TS][TS];
    float acc[WPT];
    for (int w = 0; w < WPT; w++)
        acc[w] = 0.0f;
    const int RTS = TS / WPT;
    for (int t = 0; t < K / TS; t++) {
        for (int w = 0; w < WPT; w++) {
            As[row + w * RTS][col] = A[(grow + w * RTS) * K + t * TS + col];
        }
#if VW == 1
        for (int w = 0; w < WPT; w++)
            Bs[row + w * RTS][col] = B[(t * TS + row + w * RTS) * N + gcol];
#else
        // vector loads: the first TS/VW work-items of a row each load VW consecutive elements
        for (int w = 0; w < WPT; w++) {
            if (col < TS / VW) {
                const int r = row + w * RTS;
                const int base = (t * TS + r) * N + get_group_id(0) * TS + col * VW;
#if VW == 2
                const float2 v = vload2(0, B + base);
                Bs[r][col * 2] = v.x; Bs[r][col * 2 + 1] = v.y;
#else
                const float4 v = vload4(0, B + base);
                Bs[r][col * 4] = v.x; Bs[r][col * 4 + 1] = v.y; Bs[r][col * 4 + 2] = v.z; Bs[r][col * 4 + 3] = v.w;
#endif
            }
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; k++) {
            const float b = Bs[k][col];
            for (int w = 0; w < WPT; w++)
                acc[w] += As[row + w * RTS][k] * b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int w = 0; w < WPT; w++)
        C[(grow + w * RTS) * N + gcol] = acc[w];
}
