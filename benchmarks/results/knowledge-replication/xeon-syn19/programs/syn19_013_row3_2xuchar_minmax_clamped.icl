#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped,in1:clamped)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output) {
    float acc = -1.0e30f;
    for (int j = 0; j <= 0; j++) {
        for (int i = -3; i <= 3; i++) {
            acc = max(acc, (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j]);
            acc = max(acc, (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in1[idx + i][idy + j]);
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
