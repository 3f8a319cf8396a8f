#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output, float filter[3][3]) {
    float window[10];
    float acc = 0.0f;
    window[0] = filter[-1 + 1][0 + 1] * exp(-(float)in0[idx + 0][idy - 1] * (float)in0[idx + 0][idy - 1]);
    window[1] = filter[-1 + 1][0 + 1] * exp(-(float)in1[idx + 0][idy - 1] * (float)in1[idx + 0][idy - 1]);
    window[2] = filter[0 + 1][-1 + 1] * exp(-(float)in0[idx - 1][idy + 0] * (float)in0[idx - 1][idy + 0]);
    window[3] = filter[0 + 1][-1 + 1] * exp(-(float)in1[idx - 1][idy + 0] * (float)in1[idx - 1][idy + 0]);
    window[4] = filter[0 + 1][0 + 1] * exp(-(float)in0[idx + 0][idy + 0] * (float)in0[idx + 0][idy + 0]);
    window[5] = filter[0 + 1][0 + 1] * exp(-(float)in1[idx + 0][idy + 0] * (float)in1[idx + 0][idy + 0]);
    window[6] = filter[0 + 1][1 + 1] * exp(-(float)in0[idx + 1][idy + 0] * (float)in0[idx + 1][idy + 0]);
    window[7] = filter[0 + 1][1 + 1] * exp(-(float)in1[idx + 1][idy + 0] * (float)in1[idx + 1][idy + 0]);
    window[8] = filter[1 + 1][0 + 1] * exp(-(float)in0[idx + 0][idy + 1] * (float)in0[idx + 0][idy + 1]);
    window[9] = filter[1 + 1][0 + 1] * exp(-(float)in1[idx + 0][idy + 1] * (float)in1[idx + 0][idy + 1]);
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
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
