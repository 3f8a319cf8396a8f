// unsharp.icl -- unsharp masking: blur with a 3x3 binomial kernel [1 2 1]^T [1 2 1] / 16,
// then sharpen:  output = input + amount * (input - blurred).
// Uses a helper function (ext) for the 1-D binomial weight.
// Boundary: input is `clamped` (nearest edge pixel; SciPy mode='nearest').
// Host: input, output are float32 arrays of shape (height, width); img[x][y] is arr[y, x];
// amount is a Python float. output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)

float binomial(int d) {
    return d == 0 ? 2.0f : 1.0f;
}

void unsharp(Image<float> input, Image<float> output, float amount) {
    float blurred = 0.0f;
    for (int j = -1; j <= 1; j++)
        for (int i = -1; i <= 1; i++)
            blurred += binomial(i) * binomial(j) * input[idx + i][idy + j];
    blurred = blurred / 16.0f;
    float c = input[idx][idy];
    output[idx][idy] = c + amount * (c - blurred);
}
