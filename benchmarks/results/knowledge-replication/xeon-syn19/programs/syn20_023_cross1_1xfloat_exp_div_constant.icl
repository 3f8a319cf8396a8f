#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output, float filter[3][3]) {
    float weights[9];
    if (WEIGHTS == 1) {
        for (int j = -1; j <= 1; j++) {
            for (int i = -1; i <= 1; i++) {
                weights[(j + 1) * 3 + i + 1] = filter[j + 1][i + 1];
            }
        }
    }
    float acc = 0.0f;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            if (i == 0 || j == 0) {
                acc += (WEIGHTS == 1 ? weights[(j + 1) * 3 + i + 1] : filter[j + 1][i + 1]) * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]) / (exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]) + 2.0f);
            }
        }
    }
    output[idx][idy] = acc;
}
