#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<float> in0, Image<float> output, float filter[9][9]) {
    float acc = 0.0f;
    for (int j = -4; j <= 4; j++) {
        for (int i = -4; i <= 4; i++) {
            if (i == 0 || j == 0) {
                acc += filter[j + 4][i + 4] * (float)in0[idx + i][idy + j];
            }
        }
    }
    output[idx][idy] = acc;
}
