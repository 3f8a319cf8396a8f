#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:clamped,in1:clamped)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, Image<float> output2, float filter[5][5]) {
    float window[10];
    float acc = 0.0f;
    int k = 0;
    for (int j = 0; j <= 0; j++) {
        for (int i = -2; i <= 2; i++) {
            window[k] = filter[j + 2][i + 2] * (float)in0[idx + i][idy + j]; k++;
            window[k] = filter[j + 2][i + 2] * (float)in1[idx + i][idy + j]; k++;
        }
    }
    for (int a = 0; a <= 5; a++) {
        int m = a;
        for (int b = a + 1; b < 10; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[5];
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
