#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<float> in0, Image<float> output) {
    float window[1];
    float acc = 0.0f;
    int k = 0;
    for (int j = 0; j <= 0; j++) {
        for (int i = 0; i <= 0; i++) {
            window[k] = (1.0f / (1.0f + (float)(i * i + j * j))) * sqrt((float)in0[idx + i][idy + j] + 1.0f); k++;
        }
    }
    for (int a = 0; a <= 0; a++) {
        int m = a;
        for (int b = a + 1; b < 1; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[0];
    output[idx][idy] = acc;
}
