"""One tuned kernel per device, ready for an application: OpenCL source, a JSON description and
a C host wrapper (header + implementation) that builds and runs it with the system's OpenCL.

The C wrapper embeds the source, so an application needs only the two C files:

    imcl_<kernel> k;
    imcl_<kernel>_init(&k, context, device, queue);             /* builds the tuned kernel */
    imcl_<kernel>_run(&k, <arrays and sizes>, <scalars>);       /* uploads, launches, downloads */
    imcl_<kernel>_release(&k);
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence


from . import __version__, escape, host_wrapper
from .codegen.variant import KernelArg, kernel_args, tile_bytes_at_launch
from .ir import types as ty
from .outputs import check_output, output_folder, write_atomic

def describe_variant(program, config: Mapping[str, int], device=None, problem_shape=None,
                     measured: Optional[float] = None, predicted: Optional[float] = None) -> dict:
    """The JSON description of a tuned variant: everything a host needs to launch it."""
    plan = program.plan(config, device)
    info = program.info
    analysis = program.analysis_for(dict(plan.tunables))
    axes = "xyz"[: info.grid_dims]
    args = []
    for a in kernel_args(info, plan):
        entry: dict[str, Any] = {"name": a.name, "role": a.role, "parameter": a.param, "type": a.ctype}
        if a.role == "extent":
            entry["axis"] = "width height depth".split()[a.axis]
        if a.role == "tile":
            fp = analysis.footprints[a.param]
            entry["halo_low"] = list(fp.halo_low)
            entry["halo_high"] = list(fp.halo_high)
            element = info.arrays[a.param].element
            entry["element_bytes"] = element.dtype.itemsize * (element.width if isinstance(element, ty.VectorType) else 1)
            entry["bytes"] = ("element_bytes * prod over axes d of (local[d] * "
                              + ("1" if plan.interleaved else "pixels_per_item[d]") + " + halo_low[d] + halo_high[d])")
            if plan.wg is not None:
                entry["bytes_at_tuned_size"] = tile_bytes_at_launch(info, plan, analysis, a.param)
        if a.role in ("buffer", "image"):
            array = info.arrays[a.param]
            entry["access"] = array.access
            entry["element"] = array.element.c_name()
            entry["dtype"] = array.element.dtype.name
            entry["shape"] = _shape_rule(array)
        args.append(entry)
    from .runtime.devices import describe, select_device
    from .tuned import program_key

    d = describe(select_device(device))
    return {
        "generator": f"imagecl {__version__}",
        "program": program.filename,
        "program_key": program_key(info.unit),  # lets `imagecl.load(folder)` check the program is the one tuned
        "kernel": program.name,
        "opencl_kernel": program.kernel_symbol,
        "device": d.name,  # what the host wrapper selects the device by
        "platform": d.platform,
        "driver": d.driver,
        "compute_units": d.compute_units,  # the device's size: one name can have several (a 16- and a 32-core VM)
        "configuration": dict(config),
        "problem_size": None if problem_shape is None else list(reversed(problem_shape)),
        "grid": {"images": info.grid, "fixed_size": list(info.grid_size) if info.grid_size else None,
                 "dimensions": info.grid_dims},
        "pixels_per_item": list(plan.px),
        "layout": "interleaved" if plan.interleaved else "blocked",
        "local_size": list(plan.wg) if plan.wg else None,
        "global_size_rule": "global[d] = round_up(ceil(grid[d] / pixels_per_item[d]), local[d]) for "
                            + ", ".join(f"d = {a}" for a in axes),
        "build_options": "",
        "arguments": args,
        "measured_seconds": measured,
        "predicted_seconds": predicted,
        "date": time.strftime("%Y-%m-%d"),
    }


def _shape_rule(array) -> str:
    if array.kind == "image":
        axes = ["height", "width"] if array.dims == 2 else ["depth", "height", "width"]
        return "(" + ", ".join(axes) + (", 4" if isinstance(array.element, ty.VectorType) else "") + ")"
    if array.kind == "array":
        return str(list(array.shape))
    return "(length,)"


def c_wrapper(program, config: Mapping[str, int], device=None) -> tuple[str, str]:
    """(header, implementation) of a C host wrapper for the tuned variant (imagecl/host_wrapper.py)."""
    plan = program.plan(config, device)
    source = program.source_of(plan, [f"configuration: {json.dumps(dict(config), sort_keys=True)}"])
    return host_wrapper.render(program, plan, source, config, select_name(device))


def select_name(device) -> str:
    from .runtime.devices import select_device

    return select_device(device).name.strip()


def tuned_file_names(name: str) -> list[str]:
    """The files export_tuned writes for the kernel `name`, so that a caller can check them first."""
    name = escape.file_component(escape.c_identifier(name, "the kernel's name"), "a tuned kernel's file name")
    return [f"{name}.cl", f"{name}.json", f"imcl_{name}.h", f"imcl_{name}.c"]


def export_tuned(program, config: Mapping[str, int], out_dir: str | Path, device=None, problem_shape=None,
                 measured: Optional[float] = None, predicted: Optional[float] = None,
                 inputs: Sequence[str | Path] = ()) -> list[Path]:
    """Write <kernel>.cl, <kernel>.json, imcl_<kernel>.h and imcl_<kernel>.c into `out_dir` (created
    if missing, in an existing folder), each atomically; none of them may be one of `inputs`."""
    out = output_folder(out_dir)
    names = tuned_file_names(program.name)
    for filename in names:
        check_output(out / filename, inputs, "a tuned kernel's file")
    config = program.space_for(device, problem_shape).complete(config)
    source = program.source_of(program.plan(config, device),
                               [f"configuration: {json.dumps(dict(config), sort_keys=True)}"])
    description = describe_variant(program, config, device, problem_shape, measured, predicted)
    header, impl = c_wrapper(program, config, device)
    texts = [source, json.dumps(description, indent=2) + "\n", header, impl]
    return [write_atomic(out / filename, text) for filename, text in zip(names, texts)]


__all__ = ["export_tuned", "describe_variant", "c_wrapper", "KernelArg"]
