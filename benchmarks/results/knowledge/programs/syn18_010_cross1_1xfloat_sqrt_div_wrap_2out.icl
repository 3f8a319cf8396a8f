#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<float> in0, Image<float> output, Image<float> output2) {
    float acc = 0.0f;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            if (i == 0 || j == 0) {
                acc += (1.0f / (1.0f + (float)(i * i + j * j))) * sqrt((float)in0[idx + i][idy + j] + 1.0f) / (sqrt((float)in0[idx + i][idy + j] + 1.0f) + 2.0f);
            }
        }
    }
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
