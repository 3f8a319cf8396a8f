#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<float> in0, Image<float> in1, Image<float> output) {
    float acc = 0.0f;
    for (int j = -4; j <= 4; j++) {
        for (int i = -4; i <= 4; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * sqrt((float)in0[idx + i][idy + j] + 1.0f);
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * sqrt((float)in1[idx + i][idy + j] + 1.0f);
        }
    }
    output[idx][idy] = acc;
}
