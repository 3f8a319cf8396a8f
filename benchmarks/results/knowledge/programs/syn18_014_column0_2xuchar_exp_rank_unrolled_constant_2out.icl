#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output, Image<uchar> output2, float filter[1][1]) {
    float window[2];
    float acc = 0.0f;
    window[0] = filter[0 + 0][0 + 0] * exp(-(float)in0[idx + 0][idy + 0] * (float)in0[idx + 0][idy + 0]);
    window[1] = filter[0 + 0][0 + 0] * exp(-(float)in1[idx + 0][idy + 0] * (float)in1[idx + 0][idy + 0]);
    for (int a = 0; a <= 1; a++) {
        int m = a;
        for (int b = a + 1; b < 2; b++) {
            if (window[b] < window[m]) {
                m = b;
            }
        }
        float swap = window[a];
        window[a] = window[m];
        window[m] = swap;
    }
    acc = window[1];
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
    output2[idx][idy] = (uchar)clamp(acc * acc, 0.0f, 255.0f);
}
