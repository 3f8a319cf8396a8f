// harris.icl -- ImageCL example (original: acelster/ImageCL examples/harris.cpp, unchanged syntax).
// Harris corner response from precomputed gradients dx, dy over the 2x2 window
// {x, x+1} x {y, y+1} (unweighted):
//   Sxx = sum dx^2, Syy = sum dy^2, Sxy = sum dx*dy
//   output = Sxx*Syy - Sxy^2 - k*(Sxx+Syy)^2
// Boundary: dx and dy are `constant` (0 outside), so the last column/row sees zeros.
// Host: dx, dy, output are float32 arrays of shape (height, width); img[x][y] is arr[y, x];
// k is a Python float. output belongs to the grid and may be omitted.
#pragma imcl grid(dx, dy, output)
#pragma imcl boundary_cond(dx:constant,dy:constant)

void harris(Image<float> dx, Image<float> dy, Image<float> output, float k){

    float xy = 0.0f;
    float xx = 0.0f;
    float yy = 0.0f;
    
    for(int i = 0; i < 2; i++){
        for(int j = 0; j < 2; j++){
            float x = dx[idx + i][idy + j];
            float y = dy[idx + i][idy + j];
            
            xy += x*y;
            xx += x*x;
            yy += y*y;
            
        }
    }
    
    output[idx][idy] = xx*yy - xy*xy - k * (xx + yy) * (xx + yy);
            
}
