#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<float> in0, Image<float> output, Image<float> output2, float filter[5][5]) {
    float window[5];
    float acc = 0.0f;
    int k = 0;
    for (int j = -2; j <= 2; j++) {
        for (int i = 0; i <= 0; i++) {
            window[k] = filter[j + 2][i + 2] * (float)in0[idx + i][idy + j]; k++;
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
    output2[idx][idy] = acc * acc;
}
