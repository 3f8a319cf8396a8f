// stereo.icl -- the "stereo" benchmark of Falch & Elster (ML-based auto-tuning, Tables 1, 4, 5):
// block-matching disparity between two rectified int images.
// For each pixel (x, y) and each disparity d in 0..7 the cost is the sum of absolute
// differences over a 5x5 window (radius R = 2):
//   cost(d) = sum_{i,j in -2..2} |left[x+i][y+j] - right[x+i-d][y+j]|
// and disparity[x][y] is the d with the smallest cost (the smallest such d on ties).
// DISPARITY (8) and R (2) are literals, so every loop has a constant trip count and can be
// unrolled (the paper's unroll parameters for the disparity and difference loops).
// Boundary: left and right are `clamped` (the nearest edge pixel), so right[x+i-d] left of
// column 0 reads column 0.
// Host: left, right, disparity are int32 arrays of shape (height, width), img[x][y] is
// arr[y, x]; all three must have the same shape. disparity belongs to the grid and may be
// omitted. Costs are accumulated in int: keep |left - right| * 25 below 2^31.
// Paper's problem size: 256 x 256 images, disparity 8, radius 2.
#pragma imcl grid(left, right, disparity)
#pragma imcl boundary_cond(left:clamped, right:clamped)

void stereo(Image<int> left, Image<int> right, Image<int> disparity) {
    int best_cost = 0;
    int best_d = 0;
    for (int d = 0; d < 8; d++) {
        int cost = 0;
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                int diff = left[idx + i][idy + j] - right[idx + i - d][idy + j];
                cost += abs(diff);
            }
        }
        if (d == 0 || cost < best_cost) {
            best_cost = cost;
            best_d = d;
        }
    }
    disparity[idx][idy] = best_d;
}
