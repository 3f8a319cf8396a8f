#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[3][3]) {
    float weights[9];
    if (WEIGHTS == 1) {
        for (int j = -1; j <= 1; j++) {
            for (int i = -1; i <= 1; i++) {
                weights[(j + 1) * 3 + i + 1] = filter[j + 1][i + 1];
            }
        }
    }
    float window[3];
    float acc = 0.0f;
    int k = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = 0; i <= 0; i++) {
            window[k] = (WEIGHTS == 1 ? weights[(j + 1) * 3 + i + 1] : filter[j + 1][i + 1]) * (float)in0[idx + i][idy + j]; k++;
        }
    }
    for (int a = 0; a <= 1; a++) {
        int m = a;
        for (int b = a + 1; b < 3; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[1];
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
