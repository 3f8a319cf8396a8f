// convolution9.icl -- the "convolution" benchmark of Falch & Elster (ML-based auto-tuning,
// Tables 1, 4, 5): 2-D convolution of a float image with a 9x9 float filter.
//   output[x][y] = sum_{i,j in -4..4} input[x-i][y-j] * filter[j+4][i+4]
// i.e. a true convolution (the filter is flipped), equal to
// scipy.ndimage.convolve(img, filter, mode='nearest'). The filter's FIRST index is the row (y)
// offset, so it reads like the host array. Both loops have constant trip counts (9), so the
// compiler may unroll them (the paper's "unroll loops" parameter).
// Boundary: input is `clamped` (the nearest edge pixel; SciPy mode='nearest',
// OpenCV BORDER_REPLICATE).
// Host: input, output are float32 arrays of shape (height, width), img[x][y] is arr[y, x];
// filter is a float32 array of shape (9, 9), filter[r][c] = arr[r, c].
// output belongs to the grid and may be omitted.
// Paper's problem size: 4096 x 4096 image, 9 x 9 filter.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)

void convolution9(Image<float> input, Image<float> output, float filter[9][9]) {
    float sum = 0.0f;
    for (int j = -4; j <= 4; j++) {
        for (int i = -4; i <= 4; i++) {
            sum += input[idx - i][idy - j] * filter[j + 4][i + 4];
        }
    }
    output[idx][idy] = sum;
}
