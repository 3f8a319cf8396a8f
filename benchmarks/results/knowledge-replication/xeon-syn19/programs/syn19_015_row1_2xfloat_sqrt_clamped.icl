#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped,in1:clamped)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[3][3]) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -1; i <= 1; i++) {
            acc += filter[j + 1][i + 1] * sqrt((float)in0[idx + i][idy + j] + 1.0f);
            acc += filter[j + 1][i + 1] * sqrt((float)in1[idx + i][idy + j] + 1.0f);
        }
    }
    output[idx][idy] = acc;
}
