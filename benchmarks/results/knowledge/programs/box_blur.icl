// box_blur.icl -- 5x5 box blur of an 8-bit image in exact integer arithmetic.
//   output[x][y] = (sum_{i,j in -2..2} input[x+i][y+j] + 12) / 25     (rounded mean)
// The sum is an int, so the result is bit-exact (0..255, fits in uchar).
// Boundary: input is `wrap` (periodic: column -1 is column width-1, row height is row 0).
// Host: input, output are uint8 arrays of shape (height, width); img[x][y] is arr[y, x].
// output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:wrap)

void box_blur(Image<uchar> input, Image<uchar> output) {
    int sum = 0;
    for (int j = -2; j <= 2; j++)
        for (int i = -2; i <= 2; i++)
            sum += input[idx + i][idy + j];
    output[idx][idy] = (uchar)((sum + 12) / 25);
}
