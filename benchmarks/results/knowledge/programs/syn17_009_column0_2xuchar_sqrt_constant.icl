#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
#pragma imcl tunable(SCALE: 1, 2)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output, float filter[1][1]) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += filter[j + 0][i + 0] * sqrt((float)in0[idx + i][idy + j] + 1.0f);
            acc += filter[j + 0][i + 0] * sqrt((float)in1[idx + i][idy + j] + 1.0f);
        }
    }
    acc = acc * (float)SCALE;
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
