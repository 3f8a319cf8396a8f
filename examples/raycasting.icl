// raycasting.icl -- the "raycasting" benchmark of Falch & Elster (ML-based auto-tuning,
// Tables 1, 4, 5): volume rendering of a 3-D float volume into a 2-D RGBA image.
// Orthographic rays run along +z. Output pixel (x, y) looks at volume column
//   vx = x * volume.width / output.width,  vy = y * volume.height / output.height
// (integer arithmetic, nearest sample) and marches z = 0 .. volume.depth-1 front to back:
//   s = volume[vx][vy][z];  c = transfer[(int)(s * 127.0f)]
//   t = (1 - acc.w) * c.w;  acc.xyz += t * c.xyz;  acc.w += t
// stopping early (break) once acc.w > 0.99 (early ray termination: a data-dependent trip
// count, which the paper unrolls partially). Finally output = convert_uchar4_sat(acc * 255),
// i.e. truncation toward zero, saturated to 0..255.
// The products are kept in statements of their own so that a*b+c is never one expression;
// with OpenCL's default FP_CONTRACT (within one expression) no fused multiply-add can then
// change the rounding, and a float32 step-by-step reference matches exactly.
// Boundary: volume is `clamped` (never needed: every sample is inside the volume).
// Host: volume is float32 of shape (depth, height, width) with values in [0, 1],
// volume[x][y][z] is arr[z, y, x]; transfer is float32 of shape (128, 4) (RGBA rows,
// components in [0, 1]); output is uint8 of shape (height, width, 4) and defines the grid,
// so it must be passed (its contents are overwritten).
// Paper's problem size: 512 x 512 output, 128^3 volume, 128-entry transfer function.
#pragma imcl grid(output)
#pragma imcl boundary_cond(volume:clamped)

void raycasting(Image<float> volume, Image<uchar4> output, float4 transfer[128]) {
    int vx = idx * volume.width / output.width;
    int vy = idy * volume.height / output.height;
    float4 acc = (float4)(0.0f, 0.0f, 0.0f, 0.0f);
    int z = 0;
    while (z < volume.depth) {
        float s = volume[vx][vy][z];
        float4 c = transfer[(int)(s * 127.0f)];
        float t = (1.0f - acc.w) * c.w;
        float3 contrib = t * c.xyz;
        acc.xyz += contrib;
        acc.w += t;
        if (acc.w > 0.99f) {
            break;
        }
        z++;
    }
    output[idx][idy] = convert_uchar4_sat(acc * 255.0f);
}
