#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[3][3]) {
    float window[9];
    float acc = 0.0f;
    int k = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            window[k] = filter[j + 1][i + 1] * (float)in0[idx + i][idy + j]; k++;
        }
    }
    for (int a = 0; a <= 4; a++) {
        int m = a;
        for (int b = a + 1; b < 9; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[4];
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
