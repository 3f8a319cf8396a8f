#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:wrap)
#pragma imcl tunable(SCALE: 1, 2)
void stencil(Image<float> in0, Image<float> output) {
    float acc = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = -2; i <= 2; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * sqrt((float)in0[idx + i][idy + j] + 1.0f);
        }
    }
    acc = acc * (float)SCALE;
    output[idx][idy] = acc;
}
