#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<float> in0, Image<float> output) {
    float acc = 0.0f;
    for (int j = -1; j <= 1; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
