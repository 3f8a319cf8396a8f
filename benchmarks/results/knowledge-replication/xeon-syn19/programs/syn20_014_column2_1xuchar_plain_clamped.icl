#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<uchar> in0, Image<uchar> output) {
    float acc = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
