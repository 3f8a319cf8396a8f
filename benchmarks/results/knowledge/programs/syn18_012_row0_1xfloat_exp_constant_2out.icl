#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:constant)
void stencil(Image<float> in0, Image<float> output, Image<float> output2) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]);
        }
    }
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
