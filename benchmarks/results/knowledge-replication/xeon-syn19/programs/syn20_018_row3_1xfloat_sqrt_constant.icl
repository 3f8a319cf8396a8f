#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output, float filter[7][7]) {
    float weights[49];
    if (WEIGHTS == 1) {
        for (int j = -3; j <= 3; j++) {
            for (int i = -3; i <= 3; i++) {
                weights[(j + 3) * 7 + i + 3] = filter[j + 3][i + 3];
            }
        }
    }
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -3; i <= 3; i++) {
            acc += (WEIGHTS == 1 ? weights[(j + 3) * 7 + i + 3] : filter[j + 3][i + 3]) * sqrt((float)in0[idx + i][idy + j] + 1.0f);
        }
    }
    output[idx][idy] = acc;
}
