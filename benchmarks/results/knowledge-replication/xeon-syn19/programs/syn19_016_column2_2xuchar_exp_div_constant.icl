#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output, float filter[5][5]) {
    float acc = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += filter[j + 2][i + 2] * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]) / (exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]) + 2.0f);
            acc += filter[j + 2][i + 2] * exp(-(float)in1[idx + i][idy + j] * (float)in1[idx + i][idy + j]) / (exp(-(float)in1[idx + i][idy + j] * (float)in1[idx + i][idy + j]) + 2.0f);
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
