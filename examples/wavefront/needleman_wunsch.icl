// Needleman-Wunsch global alignment of the sequences a and b (integer scores).
// score[i][j] is the best score of aligning a's first i symbols with b's first j, so the grid
// is (len(b) + 1) rows by (len(a) + 1) columns; row 0 and column 0 are the all-gap alignments.
#pragma imcl wavefront(score)

void needleman_wunsch(uchar* a, uchar* b, Image<int> score, int match, int mismatch, int gap) {
    if (idx == 0 || idy == 0) {
        score[idx][idy] = -gap * (idx + idy);
        return;
    }
    int s = a[idx - 1] == b[idy - 1] ? match : mismatch;
    int best = score[idx - 1][idy - 1] + s;
    best = max(best, score[idx - 1][idy] - gap);
    best = max(best, score[idx][idy - 1] - gap);
    score[idx][idy] = best;
}
