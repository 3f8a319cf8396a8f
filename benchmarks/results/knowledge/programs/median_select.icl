// median_select.icl -- the "median" benchmark of Falch & Elster (ML-based auto-tuning,
// Tables 1, 4): 5x5 median filter of an 8-bit image with an application-specific tuning
// parameter that picks the algorithm (the paper's "sorting (0) or histogram (1)"):
//   ALGORITHM 0: copy the 25 neighbours into a private array, insertion-sort it, take the
//                middle element (index 12);
//   ALGORITHM 1: build a private 256-bin histogram of the 25 neighbours and take the first
//                value v whose cumulative count exceeds 12.
// Both give exactly the same median (the 13th smallest of the 25 values).
// Boundary: input is `mirror` (reflection without repeating the edge pixel; SciPy
// mode='mirror', OpenCV BORDER_REFLECT_101).
// Host: input, output are uint8 arrays of shape (height, width); img[x][y] is arr[y, x].
// output belongs to the grid and may be omitted.
// Paper's problem size: not given in Table 5; the benchmark is a 2-D uchar -> 2-D uchar filter.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:mirror)
#pragma imcl tunable(ALGORITHM: 0, 1)

void median_select(Image<uchar> input, Image<uchar> output) {
    uchar result = 0;
    if (ALGORITHM == 0) {
        uchar window[25];
        int n = 0;
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                window[n] = input[idx + i][idy + j];
                n++;
            }
        }
        /* insertion sort, ascending */
        for (int a = 1; a < 25; a++) {
            uchar v = window[a];
            int b = a - 1;
            while (b >= 0 && window[b] > v) {
                window[b + 1] = window[b];
                b--;
            }
            window[b + 1] = v;
        }
        result = window[12];
    } else {
        int hist[256];
        for (int h = 0; h < 256; h++) {
            hist[h] = 0;
        }
        for (int j = -2; j <= 2; j++) {
            for (int i = -2; i <= 2; i++) {
                hist[input[idx + i][idy + j]]++;
            }
        }
        /* the median is the first value whose cumulative count reaches 13 */
        int count = 0;
        int v = 0;
        while (count + hist[v] <= 12) {
            count += hist[v];
            v++;
        }
        result = (uchar)v;
    }
    output[idx][idy] = result;
}
