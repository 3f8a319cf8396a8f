#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[5][5]) {
    float window[5];
    float acc = 0.0f;
    window[0] = filter[0 + 2][-2 + 2] * (float)in0[idx - 2][idy + 0] / ((float)in0[idx - 2][idy + 0] + 2.0f);
    window[1] = filter[0 + 2][-1 + 2] * (float)in0[idx - 1][idy + 0] / ((float)in0[idx - 1][idy + 0] + 2.0f);
    window[2] = filter[0 + 2][0 + 2] * (float)in0[idx + 0][idy + 0] / ((float)in0[idx + 0][idy + 0] + 2.0f);
    window[3] = filter[0 + 2][1 + 2] * (float)in0[idx + 1][idy + 0] / ((float)in0[idx + 1][idy + 0] + 2.0f);
    window[4] = filter[0 + 2][2 + 2] * (float)in0[idx + 2][idy + 0] / ((float)in0[idx + 2][idy + 0] + 2.0f);
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
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
