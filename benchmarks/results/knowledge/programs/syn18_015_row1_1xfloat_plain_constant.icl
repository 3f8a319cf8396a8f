#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
void stencil(Image<float> in0, Image<float> output, float filter[3][3]) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -1; i <= 1; i++) {
            acc += filter[j + 1][i + 1] * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
