#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<float> in0, Image<float> output) {
    float window[3];
    float acc = 0.0f;
    int k = 0;
    for (int j = -1; j <= 1; j++) {
        for (int i = 0; i <= 0; i++) {
            window[k] = (1.0f / (1.0f + (float)(i * i + j * j))) * (float)in0[idx + i][idy + j]; k++;
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
    output[idx][idy] = acc;
}
