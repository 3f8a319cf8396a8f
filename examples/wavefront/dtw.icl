// Dynamic time warping of the series a (columns) and b (rows): cost[i][j] is the cheapest warping
// path's cost from (0, 0) to (i, j); reads before row 0 or column 0 return a huge cost.
#pragma imcl wavefront(cost)
#pragma imcl boundary_cond(cost:constant(1e30))

void dtw(float* a, float* b, Image<float> cost) {
    float d = fabs(a[idx] - b[idy]);
    if (idx == 0 && idy == 0) {
        cost[idx][idy] = d;
        return;
    }
    cost[idx][idy] = d + min(cost[idx - 1][idy - 1], min(cost[idx - 1][idy], cost[idx][idy - 1]));
}
