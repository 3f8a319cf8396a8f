// median.icl -- 5x5 median filter of an 8-bit image.
// The 25 neighbours are copied into a private array and sorted by insertion sort;
// the result is the middle element window[12].
// Boundary: input is `mirror` (reflection without repeating the edge pixel; SciPy
// mode='mirror', OpenCV BORDER_REFLECT_101).
// Host: input, output are uint8 arrays of shape (height, width); img[x][y] is arr[y, x].
// output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:mirror)

void median(Image<uchar> input, Image<uchar> output) {
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
    output[idx][idy] = window[12];
}
