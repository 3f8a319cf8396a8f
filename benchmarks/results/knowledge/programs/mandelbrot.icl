// mandelbrot.icl -- Mandelbrot escape-time iteration counts in Q12 fixed point (4096 == 1.0).
// Pixel (x, y) is the point c = (xmin + step*x, ymin + step*y) / 4096. Starting from z = 0,
// iterate z = z^2 + c; stop when |z|^2 > 4 or after maxiter iterations; output = iterations done.
// Integer arithmetic with C division (truncation toward zero) keeps the result bit-exact on any
// device (a float version would depend on FMA contraction). Values stay within int range
// for |xmin|, |ymin|, |xmin + step*x|, |ymin + step*y| <= 3*4096.
// Boundary: no image is read (default `constant`, irrelevant).
// Host: output is an int32 array of shape (height, width) that the caller MUST pass, because it
// alone defines the grid (its contents are overwritten); output[x][y] is arr[y, x].
// xmin, ymin, step, maxiter are Python ints.
#pragma imcl grid(output)

void mandelbrot(Image<int> output, int xmin, int ymin, int step, int maxiter) {
    int cr = xmin + step * idx;
    int ci = ymin + step * idy;
    int zr = 0, zi = 0;
    int iter = 0;
    while (iter < maxiter) {
        int zr2 = zr * zr / 4096;
        int zi2 = zi * zi / 4096;
        if (zr2 + zi2 > 4 * 4096)
            break;
        zi = 2 * zr * zi / 4096 + ci;
        zr = zr2 - zi2 + cr;
        iter++;
    }
    output[idx][idy] = iter;
}
