#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[3][3]) {
    float weights[9];
    if (WEIGHTS == 1) {
        for (int j = -1; j <= 1; j++) {
            for (int i = -1; i <= 1; i++) {
                weights[(j + 1) * 3 + i + 1] = filter[j + 1][i + 1];
            }
        }
    }
    float acc = 0.0f;
    acc += (WEIGHTS == 1 ? weights[(-1 + 1) * 3 - 1 + 1] : filter[-1 + 1][-1 + 1]) * (float)in0[idx - 1][idy - 1] / ((float)in0[idx - 1][idy - 1] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 1) * 3 + 0 + 1] : filter[-1 + 1][0 + 1]) * (float)in0[idx + 0][idy - 1] / ((float)in0[idx + 0][idy - 1] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 1) * 3 + 1 + 1] : filter[-1 + 1][1 + 1]) * (float)in0[idx + 1][idy - 1] / ((float)in0[idx + 1][idy - 1] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 1) * 3 - 1 + 1] : filter[0 + 1][-1 + 1]) * (float)in0[idx - 1][idy + 0] / ((float)in0[idx - 1][idy + 0] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 1) * 3 + 0 + 1] : filter[0 + 1][0 + 1]) * (float)in0[idx + 0][idy + 0] / ((float)in0[idx + 0][idy + 0] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 1) * 3 + 1 + 1] : filter[0 + 1][1 + 1]) * (float)in0[idx + 1][idy + 0] / ((float)in0[idx + 1][idy + 0] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 1) * 3 - 1 + 1] : filter[1 + 1][-1 + 1]) * (float)in0[idx - 1][idy + 1] / ((float)in0[idx - 1][idy + 1] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 1) * 3 + 0 + 1] : filter[1 + 1][0 + 1]) * (float)in0[idx + 0][idy + 1] / ((float)in0[idx + 0][idy + 1] + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 1) * 3 + 1 + 1] : filter[1 + 1][1 + 1]) * (float)in0[idx + 1][idy + 1] / ((float)in0[idx + 1][idy + 1] + 2.0f);
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
