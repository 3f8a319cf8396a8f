// Length of the longest common subsequence of a's first idx + 1 symbols and b's first idy + 1.
// The grid is len(b) rows by len(a) columns; reads before row 0 or column 0 return the
// boundary's 0 (the empty prefix).
#pragma imcl wavefront(length)

void lcs(uchar* a, uchar* b, Image<int> length) {
    if (a[idx] == b[idy])
        length[idx][idy] = length[idx - 1][idy - 1] + 1;
    else
        length[idx][idy] = max(length[idx - 1][idy], length[idx][idy - 1]);
}
