#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output) {
    float weights[9];
    if (WEIGHTS == 1) {
        for (int j = -1; j <= 1; j++) {
            for (int i = -1; i <= 1; i++) {
                weights[(j + 1) * 3 + i + 1] = (1.0f / (1.0f + (float)(i * i + j * j)));
            }
        }
    }
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -1; i <= 1; i++) {
            acc += (WEIGHTS == 1 ? weights[(j + 1) * 3 + i + 1] : (1.0f / (1.0f + (float)(i * i + j * j)))) * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
