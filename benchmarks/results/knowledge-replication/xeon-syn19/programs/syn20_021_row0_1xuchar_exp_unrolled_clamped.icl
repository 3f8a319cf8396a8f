#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<uchar> in0, Image<uchar> output, float filter[1][1]) {
    float acc = 0.0f;
    acc += filter[0 + 0][0 + 0] * exp(-(float)in0[idx + 0][idy + 0] * (float)in0[idx + 0][idy + 0]);
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
