#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<uchar> in0, Image<uchar> output) {
    float weights[1];
    if (WEIGHTS == 1) {
        for (int j = 0; j <= 0; j++) {
            for (int i = 0; i <= 0; i++) {
                weights[(j + 0) * 1 + i + 0] = (1.0f / (1.0f + (float)(i * i + j * j)));
            }
        }
    }
    float acc = 0.0f;
    for (int j = 0; j <= 0; j++) {
        for (int i = 0; i <= 0; i++) {
            acc += (WEIGHTS == 1 ? weights[(j + 0) * 1 + i + 0] : (1.0f / (1.0f + (float)(i * i + j * j)))) * (float)in0[idx + i][idy + j];
        }
    }
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
