#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output) {
    float weights[25];
    if (WEIGHTS == 1) {
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                weights[(j + 2) * 5 + i + 2] = (1.0f / (1.0f + (float)(i * i + j * j)));
            }
        }
    }
    float acc = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (WEIGHTS == 1 ? weights[(j + 2) * 5 + i + 2] : (1.0f / (1.0f + (float)(i * i + j * j)))) * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
