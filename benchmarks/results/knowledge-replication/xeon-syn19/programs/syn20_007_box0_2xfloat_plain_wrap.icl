#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:wrap,in1:wrap)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[1][1]) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += filter[j + 0][i + 0] * (float)in0[idx + i][idy + j];
            acc += filter[j + 0][i + 0] * (float)in1[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
