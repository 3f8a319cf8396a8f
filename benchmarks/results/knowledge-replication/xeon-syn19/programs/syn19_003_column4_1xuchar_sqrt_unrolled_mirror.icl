#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:mirror)
void stencil(Image<uchar> in0, Image<uchar> output) {
    float acc = 0.0f;
    acc += (1.0f / (1.0f + (float)(0 * 0 - 4 * -4))) * sqrt((float)in0[idx + 0][idy - 4] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 - 3 * -3))) * sqrt((float)in0[idx + 0][idy - 3] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 - 2 * -2))) * sqrt((float)in0[idx + 0][idy - 2] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 - 1 * -1))) * sqrt((float)in0[idx + 0][idy - 1] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 + 0 * 0))) * sqrt((float)in0[idx + 0][idy + 0] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 + 1 * 1))) * sqrt((float)in0[idx + 0][idy + 1] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 + 2 * 2))) * sqrt((float)in0[idx + 0][idy + 2] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 + 3 * 3))) * sqrt((float)in0[idx + 0][idy + 3] + 1.0f);
    acc += (1.0f / (1.0f + (float)(0 * 0 + 4 * 4))) * sqrt((float)in0[idx + 0][idy + 4] + 1.0f);
    output[idx][idy] = (uchar)clamp(acc, 0.0f, 255.0f);
}
