#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:mirror)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output, Image<float> output2) {
    float weights[1];
    if (WEIGHTS == 1) {
        for (int j = 0; j <= 0; j++) {
            for (int i = 0; i <= 0; i++) {
                weights[(j + 0) * 1 + i + 0] = (1.0f / (1.0f + (float)(i * i + j * j)));
            }
        }
    }
    float acc = 0.0f;
    acc += (WEIGHTS == 1 ? weights[(0 + 0) * 1 + 0 + 0] : (1.0f / (1.0f + (float)(0 * 0 + 0 * 0)))) * (float)in0[idx + 0][idy + 0];
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
