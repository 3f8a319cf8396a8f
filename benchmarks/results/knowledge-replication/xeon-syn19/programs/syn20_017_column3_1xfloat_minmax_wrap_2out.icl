#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<float> in0, Image<float> output, Image<float> output2) {
    float acc = -1.0e30f;
    for (int j = -3; j <= 3; j++) {
        for (int i = 0; i <= 0; i++) {
            acc = max(acc, (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j]);
        }
    }
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
