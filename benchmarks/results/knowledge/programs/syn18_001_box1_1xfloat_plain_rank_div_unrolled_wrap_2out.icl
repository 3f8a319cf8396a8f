#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<float> in0, Image<float> output, Image<float> output2, float filter[3][3]) {
    float window[9];
    float acc = 0.0f;
    window[0] = filter[-1 + 1][-1 + 1] * (float)in0[idx - 1][idy - 1] / ((float)in0[idx - 1][idy - 1] + 2.0f);
    window[1] = filter[-1 + 1][0 + 1] * (float)in0[idx + 0][idy - 1] / ((float)in0[idx + 0][idy - 1] + 2.0f);
    window[2] = filter[-1 + 1][1 + 1] * (float)in0[idx + 1][idy - 1] / ((float)in0[idx + 1][idy - 1] + 2.0f);
    window[3] = filter[0 + 1][-1 + 1] * (float)in0[idx - 1][idy + 0] / ((float)in0[idx - 1][idy + 0] + 2.0f);
    window[4] = filter[0 + 1][0 + 1] * (float)in0[idx + 0][idy + 0] / ((float)in0[idx + 0][idy + 0] + 2.0f);
    window[5] = filter[0 + 1][1 + 1] * (float)in0[idx + 1][idy + 0] / ((float)in0[idx + 1][idy + 0] + 2.0f);
    window[6] = filter[1 + 1][-1 + 1] * (float)in0[idx - 1][idy + 1] / ((float)in0[idx - 1][idy + 1] + 2.0f);
    window[7] = filter[1 + 1][0 + 1] * (float)in0[idx + 0][idy + 1] / ((float)in0[idx + 0][idy + 1] + 2.0f);
    window[8] = filter[1 + 1][1 + 1] * (float)in0[idx + 1][idy + 1] / ((float)in0[idx + 1][idy + 1] + 2.0f);
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
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
