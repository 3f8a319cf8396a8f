"""The paper's convolution space (Table 1 of Falch & Elster) and the H200's limits, shared by the
throughput, exhaustive-measurement and code-generation benchmarks."""
from __future__ import annotations

import itertools

from ..space import DeviceLimits

POW2 = [1, 2, 4, 8, 16, 32, 64, 128]

# the H200's OpenCL limits, so that a space is the GPU host's without an OpenCL device here
H200 = DeviceLimits(name="NVIDIA H200", max_work_group_size=1024, max_work_item_sizes=(1024, 1024, 64),
                    local_mem_size=48 * 1024, max_constant_buffer_size=64 * 1024, max_constant_args=9,
                    image_support=True, image2d_max=(32768, 32768), image3d_max=(16384, 16384, 16384))


def paper_space(prog) -> list[dict]:
    """Table 1's 131,072 configurations of convolution9.icl: work-group and pixels per work-item
    1..128 in x and y, image memory, local memory, interleaved, unroll (none/full) and constant
    memory for the filter."""
    unroll = [p.name for p in prog.space.parameters if p.kind == "unroll"]
    return [{"wg_x": wx, "wg_y": wy, "px_x": px, "px_y": py, "image_input": img, "local_input": loc,
             "interleaved": inter, "constant_filter": const, **{n: 9 if unr else 1 for n in unroll}}
            for wx, wy, px, py, img, loc, inter, unr, const in itertools.product(POW2, POW2, POW2, POW2,
                                                                                 *[(0, 1)] * 5)]
