#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<uchar> in0, Image<uchar> output, Image<uchar> output2) {
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -2; i <= 2; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j] / ((float)in0[idx + i][idy + j] + 2.0f);
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
    output2[idx][idy] = (uchar)clamp(acc * acc, 0.0f, 255.0f);
}
