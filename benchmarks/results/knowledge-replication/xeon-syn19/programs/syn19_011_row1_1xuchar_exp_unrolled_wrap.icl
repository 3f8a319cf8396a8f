#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:wrap)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[3][3]) {
    float acc = 0.0f;
    acc += filter[0 + 1][-1 + 1] * exp(-(float)in0[idx - 1][idy + 0] * (float)in0[idx - 1][idy + 0]);
    acc += filter[0 + 1][0 + 1] * exp(-(float)in0[idx + 0][idy + 0] * (float)in0[idx + 0][idy + 0]);
    acc += filter[0 + 1][1 + 1] * exp(-(float)in0[idx + 1][idy + 0] * (float)in0[idx + 1][idy + 0]);
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
