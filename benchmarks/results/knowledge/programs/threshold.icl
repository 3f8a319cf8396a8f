// threshold.icl -- ImageCL example (original: acelster/ImageCL examples/threshold.cpp, unchanged syntax).
// Per-column thresholding: output = above where input > thresholds[x], else below
// (x is the column; the threshold array has one entry per column).
// Boundary: no out-of-bounds reads (every access is at the grid point); default `constant`.
// Host: input, output are uint8 arrays of shape (height, width), img[x][y] is arr[y, x];
// thresholds is a 1-D uint8 array of length >= width; above, below are Python ints (0..255).
// output is NOT in the grid, so the caller must pass it (its old contents are overwritten).
#pragma imcl grid(input)
void copy(unsigned char above, unsigned char below, Image<unsigned char> input, Image<unsigned char> output, unsigned char* thresholds){

    if(input[idx][idy] > thresholds[idx]){
        output[idx][idy] = above;
    }
    else{
        output[idx][idy] = below;
    }
}
