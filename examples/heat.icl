// heat.icl -- one explicit step of the heat (diffusion) equation on a float image:
//   output = input + alpha * (north + south + east + west - 4 * input)
// stable for 0 <= alpha <= 0.25. Its output is its next step's input:
// prog.iterate(n, input=u, alpha=0.2) runs n steps with the image kept on the device(s).
// Boundary: input is `clamped` (insulated edges: the nearest edge pixel).
// Host: input, output are float32 arrays of shape (height, width); img[x][y] is arr[y, x].
// output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)

void heat(Image<float> input, Image<float> output, float alpha) {
    float c = input[idx][idy];
    float around = input[idx - 1][idy] + input[idx + 1][idy] + input[idx][idy - 1] + input[idx][idy + 1];
    output[idx][idy] = c + alpha * (around - 4.0f * c);
}
