#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[9][9]) {
    float weights[81];
    if (WEIGHTS == 1) {
        for (int j = -4; j <= 4; j++) {
            for (int i = -4; i <= 4; i++) {
                weights[(j + 4) * 9 + i + 4] = filter[j + 4][i + 4];
            }
        }
    }
    float acc = -1.0e30f;
    for (int j = -4; j <= 4; j++) {
        for (int i = -4; i <= 4; i++) {
            if (i == 0 || j == 0) {
                acc = max(acc, (WEIGHTS == 1 ? weights[(j + 4) * 9 + i + 4] : filter[j + 4][i + 4]) * (float)in0[idx + i][idy + j]);
                acc = max(acc, (WEIGHTS == 1 ? weights[(j + 4) * 9 + i + 4] : filter[j + 4][i + 4]) * (float)in1[idx + i][idy + j]);
            }
        }
    }
    output[idx][idy] = acc;
}
