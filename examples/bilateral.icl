// bilateral.icl -- the "bilateral" benchmark of Falch & Elster (ML-based auto-tuning,
// Tables 1, 4, 5): bilateral filter of an 8-bit volume, filter width 5 (radius 2):
//   ws(i,j,k) = exp((float)(i*i + j*j + k*k) * (-0.5 / sigma_spatial^2))     spatial weight
//   wr(v)     = exp((float)((v-c)*(v-c))   * (-0.5 / sigma_range^2))         range weight
//   output[x][y][z] = round( sum ws*wr*v / sum ws*wr )
// over v = input[x+i][y+j][z+k], i, j, k in -2..2, c = input[x][y][z]; round = +0.5 then
// truncate (the value is in [0, 255]).
// Tuning parameter PRECOMPUTE_SPATIAL (the paper's "precompute distance filter"):
//   1: the 125 spatial weights are computed into a private array before the main loops;
//   0: they are computed inline with exp() in the main loop.
// The weight is the same expression in both, so the two variants give identical output.
// Boundary: input is `clamped` (the nearest edge voxel).
// Host: input, output are uint8 arrays of shape (depth, height, width); img[x][y][z] is
// arr[z, y, x]. sigma_spatial, sigma_range are Python floats (> 0). output belongs to the
// grid and may be omitted.
// Paper's problem size: 256 x 128 x 128 volume, filter width 5.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:clamped)
#pragma imcl tunable(PRECOMPUTE_SPATIAL: 0, 1)

void bilateral(Image<uchar> input, Image<uchar> output, float sigma_spatial, float sigma_range) {
    float gs = -0.5f / (sigma_spatial * sigma_spatial);
    float gr = -0.5f / (sigma_range * sigma_range);
    float spatial[125];
    if (PRECOMPUTE_SPATIAL == 1) {
        int m = 0;
        for (int k = -2; k <= 2; k++) {
            for (int j = -2; j <= 2; j++) {
                for (int i = -2; i <= 2; i++) {
                    spatial[m] = exp((float)(i * i + j * j + k * k) * gs);
                    m++;
                }
            }
        }
    }
    int c = input[idx][idy][idz];
    float sum = 0.0f;
    float wsum = 0.0f;
    int n = 0;
    for (int k = -2; k <= 2; k++) {
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                int v = input[idx + i][idy + j][idz + k];
                float ws;
                if (PRECOMPUTE_SPATIAL == 1) {
                    ws = spatial[n];
                } else {
                    ws = exp((float)(i * i + j * j + k * k) * gs);
                }
                float wr = exp((float)((v - c) * (v - c)) * gr);
                float w = ws * wr;
                float wv = w * (float)v;
                sum += wv;
                wsum += w;
                n++;
            }
        }
    }
    output[idx][idy][idz] = convert_uchar_sat(sum / wsum + 0.5f);
}
