// laplace.icl -- ImageCL example (original: acelster/ImageCL examples/laplace.cpp, unchanged syntax).
// 5x5 integer-mask filter (e.g. a Laplacian) accumulated in an int, clamped to [0, 255]:
//   sum1 = 0; for i (x offset) in -2..2, for j (y offset) in -2..2:
//       sum1 += input[x+i][y+j] * mask[i+2][j+2]
// C semantics: each `+=` computes in float (input is float) and truncates back to int
// toward zero. Note mask's FIRST index is the x (column) offset.
// Boundary: input is `clamped` (nearest edge pixel).
// Host: input, output are float32 arrays of shape (height, width) (bare `Image` = Image<float>),
// img[x][y] is arr[y, x]; mask is an int32 array of shape (5, 5), mask[i][j] = arr[i, j].
// output is NOT in the grid, so the caller must pass it.
#pragma imcl grid(input)
#pragma imcl boundary_cond(input:clamped)
void copy(Image input, Image output, int mask[5][5]){

    int sum1 = 0;
    for(int i = -2; i < 3; i++){
        for(int j = -2; j < 3; j++){
            sum1 += input[idx+i][idy+j]*mask[i+2][j+2];
        }
    }
    
    sum1 = min(sum1, 255);
    sum1 = max(sum1, 0);

    output[idx][idy] = sum1;
}
