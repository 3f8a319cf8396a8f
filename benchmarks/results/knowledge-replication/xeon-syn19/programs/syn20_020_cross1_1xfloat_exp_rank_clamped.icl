#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<float> in0, Image<float> output, float filter[3][3]) {
    float window[5];
    float acc = 0.0f;
    int k = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            if (i == 0 || j == 0) {
                window[k] = filter[j + 1][i + 1] * exp(-(float)in0[idx + i][idy + j] * (float)in0[idx + i][idy + j]); k++;
            }
        }
    }
    for (int a = 0; a <= 2; a++) {
        int m = a;
        for (int b = a + 1; b < 5; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[2];
    output[idx][idy] = acc;
}
