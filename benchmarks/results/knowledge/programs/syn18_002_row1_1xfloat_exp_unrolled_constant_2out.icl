#pragma imcl grid(in0, output, output2)
#pragma imcl boundary_cond(in0:constant)
void stencil(Image<float> in0, Image<float> output, Image<float> output2, float filter[3][3]) {
    float acc = 0.0f;
    acc += filter[0 + 1][-1 + 1] * exp(-(float)in0[idx - 1][idy + 0] * (float)in0[idx - 1][idy + 0]);
    acc += filter[0 + 1][0 + 1] * exp(-(float)in0[idx + 0][idy + 0] * (float)in0[idx + 0][idy + 0]);
    acc += filter[0 + 1][1 + 1] * exp(-(float)in0[idx + 1][idy + 0] * (float)in0[idx + 1][idy + 0]);
    output[idx][idy] = acc;
    output2[idx][idy] = acc * acc;
}
