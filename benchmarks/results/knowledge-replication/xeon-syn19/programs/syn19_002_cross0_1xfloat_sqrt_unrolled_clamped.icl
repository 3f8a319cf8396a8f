#pragma imcl grid(in0, output)
#pragma imcl boundary_cond(in0:clamped)
void stencil(Image<float> in0, Image<float> output) {
    float acc = 0.0f;
    acc += (1.0f / (1.0f + (float)(0 * 0 + 0 * 0))) * sqrt((float)in0[idx + 0][idy + 0] + 1.0f);
    output[idx][idy] = acc;
}
