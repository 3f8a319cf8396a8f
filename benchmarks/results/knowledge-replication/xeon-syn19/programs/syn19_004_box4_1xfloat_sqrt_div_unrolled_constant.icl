#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
#pragma imcl tunable(WEIGHTS: 0, 1)
void stencil(Image<float> in0, Image<float> output, float filter[9][9]) {
    float weights[81];
    if (WEIGHTS == 1) {
        for (int j = -4; j <= 4; j++) {
            for (int i = -4; i <= 4; i++) {
                weights[(j + 4) * 9 + i + 4] = filter[j + 4][i + 4];
            }
        }
    }
    float acc = 0.0f;
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 - 4 + 4] : filter[-4 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy - 4] + 1.0f) / (sqrt((float)in0[idx - 4][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 - 3 + 4] : filter[-4 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy - 4] + 1.0f) / (sqrt((float)in0[idx - 3][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 - 2 + 4] : filter[-4 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy - 4] + 1.0f) / (sqrt((float)in0[idx - 2][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 - 1 + 4] : filter[-4 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy - 4] + 1.0f) / (sqrt((float)in0[idx - 1][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 + 0 + 4] : filter[-4 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy - 4] + 1.0f) / (sqrt((float)in0[idx + 0][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 + 1 + 4] : filter[-4 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy - 4] + 1.0f) / (sqrt((float)in0[idx + 1][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 + 2 + 4] : filter[-4 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy - 4] + 1.0f) / (sqrt((float)in0[idx + 2][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 + 3 + 4] : filter[-4 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy - 4] + 1.0f) / (sqrt((float)in0[idx + 3][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-4 + 4) * 9 + 4 + 4] : filter[-4 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy - 4] + 1.0f) / (sqrt((float)in0[idx + 4][idy - 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 - 4 + 4] : filter[-3 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy - 3] + 1.0f) / (sqrt((float)in0[idx - 4][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 - 3 + 4] : filter[-3 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy - 3] + 1.0f) / (sqrt((float)in0[idx - 3][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 - 2 + 4] : filter[-3 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy - 3] + 1.0f) / (sqrt((float)in0[idx - 2][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 - 1 + 4] : filter[-3 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy - 3] + 1.0f) / (sqrt((float)in0[idx - 1][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 + 0 + 4] : filter[-3 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy - 3] + 1.0f) / (sqrt((float)in0[idx + 0][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 + 1 + 4] : filter[-3 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy - 3] + 1.0f) / (sqrt((float)in0[idx + 1][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 + 2 + 4] : filter[-3 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy - 3] + 1.0f) / (sqrt((float)in0[idx + 2][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 + 3 + 4] : filter[-3 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy - 3] + 1.0f) / (sqrt((float)in0[idx + 3][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-3 + 4) * 9 + 4 + 4] : filter[-3 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy - 3] + 1.0f) / (sqrt((float)in0[idx + 4][idy - 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 - 4 + 4] : filter[-2 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy - 2] + 1.0f) / (sqrt((float)in0[idx - 4][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 - 3 + 4] : filter[-2 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy - 2] + 1.0f) / (sqrt((float)in0[idx - 3][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 - 2 + 4] : filter[-2 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy - 2] + 1.0f) / (sqrt((float)in0[idx - 2][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 - 1 + 4] : filter[-2 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy - 2] + 1.0f) / (sqrt((float)in0[idx - 1][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 + 0 + 4] : filter[-2 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy - 2] + 1.0f) / (sqrt((float)in0[idx + 0][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 + 1 + 4] : filter[-2 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy - 2] + 1.0f) / (sqrt((float)in0[idx + 1][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 + 2 + 4] : filter[-2 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy - 2] + 1.0f) / (sqrt((float)in0[idx + 2][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 + 3 + 4] : filter[-2 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy - 2] + 1.0f) / (sqrt((float)in0[idx + 3][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-2 + 4) * 9 + 4 + 4] : filter[-2 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy - 2] + 1.0f) / (sqrt((float)in0[idx + 4][idy - 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 - 4 + 4] : filter[-1 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy - 1] + 1.0f) / (sqrt((float)in0[idx - 4][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 - 3 + 4] : filter[-1 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy - 1] + 1.0f) / (sqrt((float)in0[idx - 3][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 - 2 + 4] : filter[-1 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy - 1] + 1.0f) / (sqrt((float)in0[idx - 2][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 - 1 + 4] : filter[-1 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy - 1] + 1.0f) / (sqrt((float)in0[idx - 1][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 + 0 + 4] : filter[-1 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy - 1] + 1.0f) / (sqrt((float)in0[idx + 0][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 + 1 + 4] : filter[-1 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy - 1] + 1.0f) / (sqrt((float)in0[idx + 1][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 + 2 + 4] : filter[-1 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy - 1] + 1.0f) / (sqrt((float)in0[idx + 2][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 + 3 + 4] : filter[-1 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy - 1] + 1.0f) / (sqrt((float)in0[idx + 3][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(-1 + 4) * 9 + 4 + 4] : filter[-1 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy - 1] + 1.0f) / (sqrt((float)in0[idx + 4][idy - 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 - 4 + 4] : filter[0 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy + 0] + 1.0f) / (sqrt((float)in0[idx - 4][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 - 3 + 4] : filter[0 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy + 0] + 1.0f) / (sqrt((float)in0[idx - 3][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 - 2 + 4] : filter[0 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy + 0] + 1.0f) / (sqrt((float)in0[idx - 2][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 - 1 + 4] : filter[0 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy + 0] + 1.0f) / (sqrt((float)in0[idx - 1][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 + 0 + 4] : filter[0 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy + 0] + 1.0f) / (sqrt((float)in0[idx + 0][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 + 1 + 4] : filter[0 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy + 0] + 1.0f) / (sqrt((float)in0[idx + 1][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 + 2 + 4] : filter[0 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy + 0] + 1.0f) / (sqrt((float)in0[idx + 2][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 + 3 + 4] : filter[0 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy + 0] + 1.0f) / (sqrt((float)in0[idx + 3][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(0 + 4) * 9 + 4 + 4] : filter[0 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy + 0] + 1.0f) / (sqrt((float)in0[idx + 4][idy + 0] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 - 4 + 4] : filter[1 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy + 1] + 1.0f) / (sqrt((float)in0[idx - 4][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 - 3 + 4] : filter[1 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy + 1] + 1.0f) / (sqrt((float)in0[idx - 3][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 - 2 + 4] : filter[1 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy + 1] + 1.0f) / (sqrt((float)in0[idx - 2][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 - 1 + 4] : filter[1 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy + 1] + 1.0f) / (sqrt((float)in0[idx - 1][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 + 0 + 4] : filter[1 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy + 1] + 1.0f) / (sqrt((float)in0[idx + 0][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 + 1 + 4] : filter[1 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy + 1] + 1.0f) / (sqrt((float)in0[idx + 1][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 + 2 + 4] : filter[1 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy + 1] + 1.0f) / (sqrt((float)in0[idx + 2][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 + 3 + 4] : filter[1 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy + 1] + 1.0f) / (sqrt((float)in0[idx + 3][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(1 + 4) * 9 + 4 + 4] : filter[1 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy + 1] + 1.0f) / (sqrt((float)in0[idx + 4][idy + 1] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 - 4 + 4] : filter[2 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy + 2] + 1.0f) / (sqrt((float)in0[idx - 4][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 - 3 + 4] : filter[2 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy + 2] + 1.0f) / (sqrt((float)in0[idx - 3][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 - 2 + 4] : filter[2 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy + 2] + 1.0f) / (sqrt((float)in0[idx - 2][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 - 1 + 4] : filter[2 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy + 2] + 1.0f) / (sqrt((float)in0[idx - 1][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 + 0 + 4] : filter[2 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy + 2] + 1.0f) / (sqrt((float)in0[idx + 0][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 + 1 + 4] : filter[2 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy + 2] + 1.0f) / (sqrt((float)in0[idx + 1][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 + 2 + 4] : filter[2 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy + 2] + 1.0f) / (sqrt((float)in0[idx + 2][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 + 3 + 4] : filter[2 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy + 2] + 1.0f) / (sqrt((float)in0[idx + 3][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(2 + 4) * 9 + 4 + 4] : filter[2 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy + 2] + 1.0f) / (sqrt((float)in0[idx + 4][idy + 2] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 - 4 + 4] : filter[3 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy + 3] + 1.0f) / (sqrt((float)in0[idx - 4][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 - 3 + 4] : filter[3 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy + 3] + 1.0f) / (sqrt((float)in0[idx - 3][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 - 2 + 4] : filter[3 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy + 3] + 1.0f) / (sqrt((float)in0[idx - 2][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 - 1 + 4] : filter[3 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy + 3] + 1.0f) / (sqrt((float)in0[idx - 1][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 + 0 + 4] : filter[3 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy + 3] + 1.0f) / (sqrt((float)in0[idx + 0][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 + 1 + 4] : filter[3 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy + 3] + 1.0f) / (sqrt((float)in0[idx + 1][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 + 2 + 4] : filter[3 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy + 3] + 1.0f) / (sqrt((float)in0[idx + 2][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 + 3 + 4] : filter[3 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy + 3] + 1.0f) / (sqrt((float)in0[idx + 3][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(3 + 4) * 9 + 4 + 4] : filter[3 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy + 3] + 1.0f) / (sqrt((float)in0[idx + 4][idy + 3] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 - 4 + 4] : filter[4 + 4][-4 + 4]) * sqrt((float)in0[idx - 4][idy + 4] + 1.0f) / (sqrt((float)in0[idx - 4][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 - 3 + 4] : filter[4 + 4][-3 + 4]) * sqrt((float)in0[idx - 3][idy + 4] + 1.0f) / (sqrt((float)in0[idx - 3][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 - 2 + 4] : filter[4 + 4][-2 + 4]) * sqrt((float)in0[idx - 2][idy + 4] + 1.0f) / (sqrt((float)in0[idx - 2][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 - 1 + 4] : filter[4 + 4][-1 + 4]) * sqrt((float)in0[idx - 1][idy + 4] + 1.0f) / (sqrt((float)in0[idx - 1][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 + 0 + 4] : filter[4 + 4][0 + 4]) * sqrt((float)in0[idx + 0][idy + 4] + 1.0f) / (sqrt((float)in0[idx + 0][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 + 1 + 4] : filter[4 + 4][1 + 4]) * sqrt((float)in0[idx + 1][idy + 4] + 1.0f) / (sqrt((float)in0[idx + 1][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 + 2 + 4] : filter[4 + 4][2 + 4]) * sqrt((float)in0[idx + 2][idy + 4] + 1.0f) / (sqrt((float)in0[idx + 2][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 + 3 + 4] : filter[4 + 4][3 + 4]) * sqrt((float)in0[idx + 3][idy + 4] + 1.0f) / (sqrt((float)in0[idx + 3][idy + 4] + 1.0f) + 2.0f);
    acc += (WEIGHTS == 1 ? weights[(4 + 4) * 9 + 4 + 4] : filter[4 + 4][4 + 4]) * sqrt((float)in0[idx + 4][idy + 4] + 1.0f) / (sqrt((float)in0[idx + 4][idy + 4] + 1.0f) + 2.0f);
    output[idx][idy] = acc;
}
