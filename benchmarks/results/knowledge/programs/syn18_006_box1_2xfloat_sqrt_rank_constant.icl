#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[3][3]) {
    float window[18];
    float acc = 0.0f;
    int k = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = -1; i <= 1; i++) {
            window[k] = filter[j + 1][i + 1] * sqrt((float)in0[idx + i][idy + j] + 1.0f); k++;
            window[k] = filter[j + 1][i + 1] * sqrt((float)in1[idx + i][idy + j] + 1.0f); k++;
        }
    }
    for (int a = 0; a <= 9; a++) {
        int m = a;
        for (int b = a + 1; b < 18; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[9];
    output[idx][idy] = acc;
}
