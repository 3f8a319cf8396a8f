#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:constant,in1:constant)
void stencil(Image<uchar> in0, Image<uchar> in1, Image<uchar> output) {
    float acc = -1.0e30f;
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 - 1 * -1))) * (float)in0[idx + 0][idy - 1] / ((float)in0[idx + 0][idy - 1] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 - 1 * -1))) * (float)in1[idx + 0][idy - 1] / ((float)in1[idx + 0][idy - 1] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(-1 * -1 + 0 * 0))) * (float)in0[idx - 1][idy + 0] / ((float)in0[idx - 1][idy + 0] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(-1 * -1 + 0 * 0))) * (float)in1[idx - 1][idy + 0] / ((float)in1[idx - 1][idy + 0] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 + 0 * 0))) * (float)in0[idx + 0][idy + 0] / ((float)in0[idx + 0][idy + 0] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 + 0 * 0))) * (float)in1[idx + 0][idy + 0] / ((float)in1[idx + 0][idy + 0] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(1 * 1 + 0 * 0))) * (float)in0[idx + 1][idy + 0] / ((float)in0[idx + 1][idy + 0] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(1 * 1 + 0 * 0))) * (float)in1[idx + 1][idy + 0] / ((float)in1[idx + 1][idy + 0] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 + 1 * 1))) * (float)in0[idx + 0][idy + 1] / ((float)in0[idx + 0][idy + 1] + 2.0f));
    acc = max(acc, (1.0f / (1.0f + (float)(0 * 0 + 1 * 1))) * (float)in1[idx + 0][idy + 1] / ((float)in1[idx + 0][idy + 1] + 2.0f));
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
