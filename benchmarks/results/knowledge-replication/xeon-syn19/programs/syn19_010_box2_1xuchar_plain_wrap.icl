#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[5][5]) {
    float acc = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = -2; i <= 2; i++) {
            acc += filter[j + 2][i + 2] * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
