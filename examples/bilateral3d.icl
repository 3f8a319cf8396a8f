// bilateral3d.icl -- 3-D bilateral filter of a float volume over a 3x3x3 neighbourhood.
//   w(i,j,k) = exp(-(i^2+j^2+k^2) / (2 sigma_spatial^2) - (v - c)^2 / (2 sigma_range^2))
//   output[x][y][z] = sum w * v / sum w
// where c = input[x][y][z] and v = input[x+i][y+j][z+k], i, j, k in -1..1.
// Boundary: input is `clamped` (the nearest edge voxel).
// Host: input, output are float32 arrays of shape (depth, height, width);
// img[x][y][z] is arr[z, y, x]. sigma_spatial, sigma_range are Python floats (> 0).
// output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)

void bilateral3d(Image<float> input, Image<float> output, float sigma_spatial, float sigma_range) {
    float center = input[idx][idy][idz];
    float gs = -0.5f / (sigma_spatial * sigma_spatial);
    float gr = -0.5f / (sigma_range * sigma_range);
    float sum = 0.0f, wsum = 0.0f;
    for (int k = -1; k <= 1; k++) {
        for (int j = -1; j <= 1; j++) {
            for (int i = -1; i <= 1; i++) {
                float v = input[idx + i][idy + j][idz + k];
                float d = v - center;
                float w = exp((float)(i * i + j * j + k * k) * gs + d * d * gr);
                sum += w * v;
                wsum += w;
            }
        }
    }
    output[idx][idy][idz] = sum / wsum;
}
