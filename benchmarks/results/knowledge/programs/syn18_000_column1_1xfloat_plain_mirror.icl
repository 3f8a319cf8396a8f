#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<float> in0, Image<float> output, float filter[3][3]) {
    float acc = 0.0f;
    for (int j = -1; j <= 1; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += filter[j + 1][i + 1] * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = acc;
}
