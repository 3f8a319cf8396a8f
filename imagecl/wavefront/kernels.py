"""OpenCL C of a wavefront program: the naive variant's per-point function (codegen/variant.py)
followed by three kernels that call it at the points of one anti-diagonal or of one diagonal of
tiles. Every kernel computes only the points whose diagonal d = x + y lies in [dlo, dhi] and whose
column x lies in [cbase + (d - dlo), c1): the column window is a device's strip of the grid
(cbase grows by one a diagonal inside a multi-GPU halo, see executor.py)."""
from __future__ import annotations

from ..codegen.variant import VariantPlan, generate, kernel_args, local_array_point_params, point_signature
from ..passes.semantic import ProgramInfo

DIAGONAL, CPU_TILES, GPU_TILES = "imcl_wf_diagonal", "imcl_wf_cpu_tiles", "imcl_wf_gpu_tiles"
# the ints every kernel takes after the program's own arguments, in this order
WINDOW = ("imcl_wf_w", "imcl_wf_h", "imcl_wf_dlo", "imcl_wf_dhi", "imcl_wf_cbase", "imcl_wf_c1")


def wavefront_source(info: ProgramInfo) -> str:
    plan = VariantPlan.naive(info)
    args = kernel_args(info, plan)
    params, values = point_signature(info, args)
    extra, _ = local_array_point_params(info, plan)
    if extra:  # passes/wavefront.py rejects local_mem, the only source of these
        raise AssertionError("local-memory arrays in a wavefront program")
    point = f"imcl_point_{info.kernel.name}({', '.join(values[:-2])}, imcl_x, imcl_y)"
    kernel_params = [f"{a.ctype} {a.name}" if a.role in ("buffer", "image") else f"const {a.ctype} {a.name}"
                     for a in args] + [f"const int {w}" for w in WINDOW]
    signature = ",\n    ".join(kernel_params)
    inside = ("imcl_x < imcl_wf_w && imcl_y < imcl_wf_h && imcl_y >= 0 && imcl_x < imcl_wf_c1 && "
              "imcl_x + imcl_y >= imcl_wf_dlo && imcl_x + imcl_y <= imcl_wf_dhi && "
              "imcl_x >= imcl_wf_cbase + (imcl_x + imcl_y - imcl_wf_dlo)")
    return generate(info, plan) + f"""

// ---- wavefront execution (imagecl/wavefront/kernels.py) ----

// One work-item per point of diagonal imcl_wf_dlo (== imcl_wf_dhi), columns from imcl_x0.
__kernel void {DIAGONAL}({signature},
    const int imcl_x0)
{{
    const int imcl_x = imcl_x0 + (int)get_global_id(0);
    const int imcl_y = imcl_wf_dlo - imcl_x;
    if ({inside})
        {point};
}}

// One work-item per square tile of side imcl_tile on tile diagonal imcl_t (tiles from column
// imcl_tx0), its points in row-major order, which follows every dependence inside the tile.
__kernel void {CPU_TILES}({signature},
    const int imcl_t, const int imcl_tx0, const int imcl_tile)
{{
    const int imcl_tx = imcl_tx0 + (int)get_global_id(0);
    const int imcl_ty = imcl_t - imcl_tx;
    for (int imcl_y = imcl_ty * imcl_tile; imcl_y < imcl_ty * imcl_tile + imcl_tile; imcl_y++)
        for (int imcl_x = imcl_tx * imcl_tile; imcl_x < imcl_tx * imcl_tile + imcl_tile; imcl_x++)
            if ({inside})
                {point};
}}

// One work-group of imcl_tile work-items per square tile on tile diagonal imcl_t: work-item i
// owns column i of the tile and the group sweeps the tile's 2 * imcl_tile - 1 inner diagonals,
// with a barrier between them (a point's west and north-west neighbours belong to work-item i - 1).
__kernel void {GPU_TILES}({signature},
    const int imcl_t, const int imcl_tx0, const int imcl_tile)
{{
    const int imcl_tx = imcl_tx0 + (int)get_group_id(0);
    const int imcl_ty = imcl_t - imcl_tx;
    const int imcl_i = (int)get_local_id(0);
    const int imcl_x = imcl_tx * imcl_tile + imcl_i;
    for (int imcl_s = 0; imcl_s < 2 * imcl_tile - 1; imcl_s++) {{
        const int imcl_r = imcl_s - imcl_i;
        const int imcl_y = imcl_ty * imcl_tile + imcl_r;
        if (imcl_r >= 0 && imcl_r < imcl_tile && {inside})
            {point};
        barrier(CLK_GLOBAL_MEM_FENCE);
    }}
}}
"""
