#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror,in1:mirror)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[5][5]) {
    float acc = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = -2; i <= 2; i++) {
            acc += filter[j + 2][i + 2] * sqrt((float)in0[idx + i][idy + j] + 1.0f);
            acc += filter[j + 2][i + 2] * sqrt((float)in1[idx + i][idy + j] + 1.0f);
        }
    }
    output[idx][idy] = acc;
}
