#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
void stencil(Image<float> in0, Image<float> output) {
    float acc = -1.0e30f;
    for (int j = -3; j <= 3; j++) {
        for (int i = -3; i <= 3; i++) {
            if (i == 0 || j == 0) {
                acc = max(acc, (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j] / ((float)in0[idx + i][idy + j] + 2.0f));
            }
        }
    }
    output[idx][idy] = acc;
}
