// The seed's synthetic wavefront: each point mixes its three earlier neighbours and then does
// `tsize` rounds of integer work (a linear congruential step), so that the work per point is
// adjustable. imagecl/wavefront/synthetic.py writes the variants with more data per point.
#pragma imcl wavefront(out)

void wavefront_synthetic(Image<int> out, int tsize) {
    uint v = (uint)out[idx - 1][idy] + 3u * (uint)out[idx][idy - 1] + 7u * (uint)out[idx - 1][idy - 1]
             + (uint)(idx * 31 + idy);
    for (int i = 0; i < tsize; i++)
        v = v * 1664525u + 1013904223u;
    out[idx][idy] = (int)(v >> 1);
}
