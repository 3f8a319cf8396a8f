#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:constant,in1:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, Image<float> output2, float filter[7][7]) {
    float weights[49];
    if (WEIGHTS == 1) {
        for (int j = -3; j <= 3; j++) {
            for (int i = -3; i <= 3; i++) {
                weights[(j + 3) * 7 + i + 3] = filter[j + 3][i + 3];
            }
        }
    }
    float acc = -1.0e30f;
    for (int j = -3; j <= 3; j++) {
        for (int i = 0; i <= 0; i++) {
            acc = max(acc, (WEIGHTS == 1 ? weights[(j + 3) * 7 + i + 3] : filter[j + 3][i + 3]) * (float)in0[idx + i][idy + j]);
            acc = max(acc, (WEIGHTS == 1 ? weights[(j + 3) * 7 + i + 3] : filter[j + 3][i + 3]) * (float)in1[idx + i][idy + j]);
        }
    }
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
