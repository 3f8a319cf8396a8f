#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant)
void stencil(Image<float> in0, Image<float> output, float filter[5][5]) {
    float acc = -1.0e30f;
    acc = max(acc, filter[-2 + 2][-2 + 2] * (float)in0[idx - 2][idy - 2]);
    acc = max(acc, filter[-2 + 2][-1 + 2] * (float)in0[idx - 1][idy - 2]);
    acc = max(acc, filter[-2 + 2][0 + 2] * (float)in0[idx + 0][idy - 2]);
    acc = max(acc, filter[-2 + 2][1 + 2] * (float)in0[idx + 1][idy - 2]);
    acc = max(acc, filter[-2 + 2][2 + 2] * (float)in0[idx + 2][idy - 2]);
    acc = max(acc, filter[-1 + 2][-2 + 2] * (float)in0[idx - 2][idy - 1]);
    acc = max(acc, filter[-1 + 2][-1 + 2] * (float)in0[idx - 1][idy - 1]);
    acc = max(acc, filter[-1 + 2][0 + 2] * (float)in0[idx + 0][idy - 1]);
    acc = max(acc, filter[-1 + 2][1 + 2] * (float)in0[idx + 1][idy - 1]);
    acc = max(acc, filter[-1 + 2][2 + 2] * (float)in0[idx + 2][idy - 1]);
    acc = max(acc, filter[0 + 2][-2 + 2] * (float)in0[idx - 2][idy + 0]);
    acc = max(acc, filter[0 + 2][-1 + 2] * (float)in0[idx - 1][idy + 0]);
    acc = max(acc, filter[0 + 2][0 + 2] * (float)in0[idx + 0][idy + 0]);
    acc = max(acc, filter[0 + 2][1 + 2] * (float)in0[idx + 1][idy + 0]);
    acc = max(acc, filter[0 + 2][2 + 2] * (float)in0[idx + 2][idy + 0]);
    acc = max(acc, filter[1 + 2][-2 + 2] * (float)in0[idx - 2][idy + 1]);
    acc = max(acc, filter[1 + 2][-1 + 2] * (float)in0[idx - 1][idy + 1]);
    acc = max(acc, filter[1 + 2][0 + 2] * (float)in0[idx + 0][idy + 1]);
    acc = max(acc, filter[1 + 2][1 + 2] * (float)in0[idx + 1][idy + 1]);
    acc = max(acc, filter[1 + 2][2 + 2] * (float)in0[idx + 2][idy + 1]);
    acc = max(acc, filter[2 + 2][-2 + 2] * (float)in0[idx - 2][idy + 2]);
    acc = max(acc, filter[2 + 2][-1 + 2] * (float)in0[idx - 1][idy + 2]);
    acc = max(acc, filter[2 + 2][0 + 2] * (float)in0[idx + 0][idy + 2]);
    acc = max(acc, filter[2 + 2][1 + 2] * (float)in0[idx + 1][idy + 2]);
    acc = max(acc, filter[2 + 2][2 + 2] * (float)in0[idx + 2][idy + 2]);
    output[idx][idy] = acc;
}
