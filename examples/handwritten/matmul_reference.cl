// The reference for matmul.cl: one work-item per element of C, no tiling.
__kernel void gemm_naive(const int M, const int N, const int K,
                         __global const float* A, __global const float* B, __global float* C)
{
    const int col = get_global_id(0);
    const int row = get_global_id(1);
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
