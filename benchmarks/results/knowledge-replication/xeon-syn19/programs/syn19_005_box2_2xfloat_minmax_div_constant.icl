#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<float> in0, Image<float> in1, Image<float> output) {
    float acc = -1.0e30f;
    for (int j = -2; j <= 2; j++) {
        for (int i = -2; i <= 2; i++) {
            acc = max(acc, (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j] / ((float)in0[idx + i][idy + j] + 2.0f));
            acc = max(acc, (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in1[idx + i][idy + j] / ((float)in1[idx + i][idy + j] + 2.0f));
        }
    }
    output[idx][idy] = acc;
}
