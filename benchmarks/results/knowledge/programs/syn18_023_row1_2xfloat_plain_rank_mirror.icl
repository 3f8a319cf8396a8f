#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror,in1:mirror)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, float filter[3][3]) {
    float window[6];
    float acc = 0.0f;
    int k = 0;
    for (int j = 0; j <= 0; j++) {
        for (int i = -1; i <= 1; i++) {
            window[k] = filter[j + 1][i + 1] * (float)in0[idx + i][idy + j]; k++;
            window[k] = filter[j + 1][i + 1] * (float)in1[idx + i][idy + j]; k++;
        }
    }
    for (int a = 0; a <= 3; a++) {
        int m = a;
        for (int b = a + 1; b < 6; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[3];
    output[idx][idy] = acc;
}
