// conway.icl -- ImageCL example (original: acelster/ImageCL examples/conway.cpp, unchanged syntax).
// One generation of Conway's Game of Life on a board of cells 0 (dead) / 1 (alive):
// a live cell with 2 or 3 live neighbours survives, a dead cell with exactly 3 becomes alive,
// every other cell is dead in the next generation (8-neighbourhood).
// Boundary: input is `constant` (cells outside the board are dead; no wrap-around).
// Host: input, output are int8 arrays of shape (height, width); img[x][y] is arr[y, x].
// output belongs to the grid and may be omitted.
#pragma imcl grid(input, output)
#pragma imcl boundary_cond(input:constant)

void conway(Image<char> input, Image<char> output){
    
    int count = -input[idx][idy];
    
    for(int i = -1; i < 2; i++){
        for(int j = -1; j < 2; j++){
            count += input[idx + i][idy + j];
        }
    }
    
    if(input[idx][idy] == 1){
        if(count < 2){
            output[idx][idy] = 0;
        }
        else if(count <= 3){
            output[idx][idy] = 1;
        }
        else{
            output[idx][idy] = 0;
        }
    }
    else{
        if(count == 3){
            output[idx][idy] = 1;
        }
        else{
            output[idx][idy] = 0;
        }
    }
}
