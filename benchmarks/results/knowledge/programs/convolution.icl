// convolution.icl -- general 2-D convolution with a fixed-size 5x5 float filter.
//   output[x][y] = sum_{i,j in -2..2} input[x-i][y-j] * filter[j+2][i+2]
// i.e. a true convolution (the filter is flipped), equal to scipy.ndimage.convolve(img, filter).
// The filter's FIRST index is the row (y) offset, so it reads like the host array.
// Boundary: input is `mirror` (reflection without repeating the edge pixel:
// ... c b | a b c ... ; OpenCV BORDER_REFLECT_101, SciPy mode='mirror').
// Host: input, output are float32 arrays of shape (height, width), img[x][y] is arr[y, x];
// filter is a float32 array of shape (5, 5), filter[r][c] = arr[r, c] (r = row offset + 2).
// output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:mirror)

void convolution(Image<float> input, Image<float> output, float filter[5][5]) {
    float sum = 0.0f;
    for (int j = -2; j <= 2; j++) {
        for (int i = -2; i <= 2; i++) {
            sum += input[idx - i][idy - j] * filter[j + 2][i + 2];
        }
    }
    output[idx][idy] = sum;
}
