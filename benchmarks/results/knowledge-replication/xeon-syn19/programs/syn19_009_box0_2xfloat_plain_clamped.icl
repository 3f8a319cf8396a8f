#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped,in1:clamped)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[1][1]) {
    float weights[1];
    if (WEIGHTS == 1) {
        for (int j = 0; j <= 0; j++) {
            for (int i = 0; i <= 0; i++) {
                weights[(j + 0) * 1 + i + 0] = filter[j + 0][i + 0];
            }
        }
    }
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (WEIGHTS == 1 ? weights[(j + 0) * 1 + i + 0] : filter[j + 0][i + 0]) * (float)in0[idx + i][idy + j];
            acc += (WEIGHTS == 1 ? weights[(j + 0) * 1 + i + 0] : filter[j + 0][i + 0]) * (float)in1[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
