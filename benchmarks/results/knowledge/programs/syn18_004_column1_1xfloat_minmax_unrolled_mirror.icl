#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<float> in0, Image<float> output) {
    float acc = -1.0e30f;
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 - 1 * -1))) * (float)in0[idx + 0][idy - 1]);
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 + 0 * 0))) * (float)in0[idx + 0][idy + 0]);
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 + 1 * 1))) * (float)in0[idx + 0][idy + 1]);
    output[idx][idy] = acc;
}
