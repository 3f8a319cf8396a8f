#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<float> in0, Image<float> output, Image<float> output2, float filter[7][7]) {
    float acc = 0.0f;
    for (int j = -3; j <= 3; j++) {
        for (int i = -3; i <= 3; i++) {
            acc += filter[j + 3][i + 3] * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]);
        }
    }
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
