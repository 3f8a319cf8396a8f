#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output, float filter[5][5]) {
    float weights[25];
    if (WEIGHTS == 1) {
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                weights[(j + 2) * 5 + i + 2] = filter[j + 2][i + 2];
            }
        }
    }
    float acc = -1.0e30f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -2; i <= 2; i++) {
            acc = max(acc, (WEIGHTS == 1 ? weights[(j + 2) * 5 + i + 2] : filter[j + 2][i + 2]) * (float)in0[idx + i][idy + j]);
        }
    }
    output[idx][idy] = acc;
}
