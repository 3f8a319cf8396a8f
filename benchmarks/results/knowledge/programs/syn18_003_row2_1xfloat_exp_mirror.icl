#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<float> in0, Image<float> output, float filter[5][5]) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -2; i <= 2; i++) {
            acc += filter[j + 2][i + 2] * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]);
        }
    }
    output[idx][idy] = acc;
}
