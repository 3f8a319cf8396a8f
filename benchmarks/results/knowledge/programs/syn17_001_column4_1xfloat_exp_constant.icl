#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
#pragma imcl tunable(SCALE: 1, 2)
void stencil(Image<float> in0, Image<float> output) {
    float acc = 0.0f;
    for (int j = -4; j <= 4; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]);
        }
    }
    acc = acc * (float)SCALE;
    output[idx][idy] = acc;
}
