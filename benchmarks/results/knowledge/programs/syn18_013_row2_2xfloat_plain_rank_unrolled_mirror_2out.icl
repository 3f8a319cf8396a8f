#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:mirror,in1:mirror)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> in1, Image<float> output, Image<float> output2, float filter[5][5]) {
    float weights[25];
    if (WEIGHTS == 1) {
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                weights[(j + 2) * 5 + i + 2] = filter[j + 2][i + 2];
            }
        }
    }
    float window[10];
    float acc = 0.0f;
    window[0] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 - 2 + 2] : filter[0 + 2][-2 + 2]) * (float)in0[idx - 2][idy + 0];
    window[1] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 - 2 + 2] : filter[0 + 2][-2 + 2]) * (float)in1[idx - 2][idy + 0];
    window[2] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 - 1 + 2] : filter[0 + 2][-1 + 2]) * (float)in0[idx - 1][idy + 0];
    window[3] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 - 1 + 2] : filter[0 + 2][-1 + 2]) * (float)in1[idx - 1][idy + 0];
    window[4] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 + 0 + 2] : filter[0 + 2][0 + 2]) * (float)in0[idx + 0][idy + 0];
    window[5] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 + 0 + 2] : filter[0 + 2][0 + 2]) * (float)in1[idx + 0][idy + 0];
    window[6] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 + 1 + 2] : filter[0 + 2][1 + 2]) * (float)in0[idx + 1][idy + 0];
    window[7] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 + 1 + 2] : filter[0 + 2][1 + 2]) * (float)in1[idx + 1][idy + 0];
    window[8] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 + 2 + 2] : filter[0 + 2][2 + 2]) * (float)in0[idx + 2][idy + 0];
    window[9] = (WEIGHTS == 1 ? weights[(0 + 2) * 5 + 2 + 2] : filter[0 + 2][2 + 2]) * (float)in1[idx + 2][idy + 0];
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
