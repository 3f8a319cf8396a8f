// add.icl -- ImageCL example (original: acelster/ImageCL examples/add.cpp, unchanged syntax).
// Pixel-wise sum of two images: output = input1 + input2.
// Boundary: no out-of-bounds reads; default `constant`.
// Host: input1, input2, output are float32 arrays of shape (height, width)
// (`Image<Pixel>` = Image<float>); img[x][y] is arr[y, x]. All three must have the same shape.
// output is NOT in the grid, so the caller must pass it.
#pragma imcl grid(input1)
void copy(Image<Pixel> input1, Image<Pixel> input2, Image<Pixel> output){

    output[idx][idy] = input1[idx][idy] + input2[idx][idy];
}
