// sobel.icl -- ImageCL example (original: acelster/ImageCL examples/sobel.cpp, unchanged syntax).
// Computes the Sobel gradients of a float image, normalised by 1/8:
//   dx = ([-1 0 1; -2 0 2; -1 0 1] correlated with input) / 8   (x = column direction)
//   dy = ([-1 -2 -1; 0 0 0; 1 2 1] correlated with input) / 8   (y = row direction)
// Boundary: input is `constant` (reads outside the image return 0).
// Host: input, dx, dy are float32 arrays of shape (height, width); input[x][y] is arr[y, x].
// dx and dy belong to the grid, so they may be omitted by the caller.
#pragma imcl grid(input, dx, dy)
#pragma imcl boundary_cond(input:constant)

void sobel(Image<float> input, Image<float> dx, Image<float> dy){

    float u1 = input[idx-1][idy-1];
    float u2 = input[idx][idy-1];
    float u3 = input[idx+1][idy-1];

    float m1 = input[idx-1][idy];
    float m3 = input[idx+1][idy];

    float b1 = input[idx-1][idy+1];
    float b2 = input[idx][idy+1];
    float b3 = input[idx+1][idy+1];

    dx[idx][idy] = ((u3-u1)+2*(m3-m1)+(b3-b1))/8.0f;
    dy[idx][idy] = ((b1-u1)+2*(b2-u2)+(b3-u3))/8.0f;

}
