#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:wrap,in1:wrap)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output, Image<uchar> output2, float filter[7][7]) {
    float acc = 0.0f;
    for (int j = -3; j <= 3; j++) {
        for (int i = -3; i <= 3; i++) {
            if (i == 0 || j == 0) {
                acc += filter[j + 3][i + 3] * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]);
                acc += filter[j + 3][i + 3] * exp(-(float)in1[idx + i][idy + j] * (float)in1[idx + i][idy + j]);
            }
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
    output2[idx][idy] = (uchar)clamp(acc * acc, 0.0f, 255.0f);
}
