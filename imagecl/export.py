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
from typing import Any, Mapping, Optional

import numpy as np

from . import __version__
from .codegen.variant import KernelArg, kernel_args, tile_bytes_at_launch
from .ir import types as ty

_C_TYPES = {"bool": "cl_int", "char": "cl_char", "uchar": "cl_uchar", "short": "cl_short", "ushort": "cl_ushort",
            "int": "cl_int", "uint": "cl_uint", "float": "cl_float", "double": "cl_double"}
_CHANNEL_TYPES = {"float": "CL_FLOAT", "uchar": "CL_UNSIGNED_INT8", "char": "CL_SIGNED_INT8",
                  "ushort": "CL_UNSIGNED_INT16", "short": "CL_SIGNED_INT16", "uint": "CL_UNSIGNED_INT32",
                  "int": "CL_SIGNED_INT32"}


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

    d = describe(select_device(device))
    return {
        "generator": f"imagecl {__version__}",
        "program": program.filename,
        "kernel": program.name,
        "device": d.name,
        "platform": d.platform,
        "driver": d.driver,
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


def _c_string(text: str) -> str:
    lines = []
    for line in text.split("\n"):
        escaped = line.replace("\\", "\\\\").replace('"', '\\"')
        lines.append(f'    "{escaped}\\n"')
    return "\n".join(lines)


def _array_image_lines(array, index: int) -> list[str]:
    """A fixed-size array in image memory: a 1-D image, or a 2-D one M wide and N high for a[N][M]."""
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    channels = "CL_RGBA" if lanes == 4 else "CL_R"
    ctype = _CHANNEL_TYPES[ty.element_scalar(array.element).name]
    lines = [f"    {{ /* the array '{array.name}' in image memory */",
             f"        cl_image_format fmt = {{{channels}, {ctype}}};",
             "        cl_image_desc desc;",
             "        memset(&desc, 0, sizeof(desc));",
             f"        desc.image_type = {'CL_MEM_OBJECT_IMAGE1D' if len(array.shape) == 1 else 'CL_MEM_OBJECT_IMAGE2D'};",
             f"        desc.image_width = {array.shape[-1]};"]
    if len(array.shape) == 2:
        lines.append(f"        desc.image_height = {array.shape[0]};")
    lines.append(f"        mem[{index}] = clCreateImage(k->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc,"
                 f" (void*){array.name}, &err);")
    lines.append("    }")
    return lines


def c_wrapper(program, config: Mapping[str, int], device=None) -> tuple[str, str]:
    """(header, implementation) of a C host wrapper for the tuned variant."""
    plan = program.plan(config, device)
    info = program.info
    analysis = program.analysis_for(dict(plan.tunables))
    name = program.name
    prefix = f"imcl_{name}"
    source = program.source_of(plan, [f"configuration: {json.dumps(dict(config), sort_keys=True)}"])
    args = kernel_args(info, plan)
    dims = info.grid_dims

    # the run() signature: every array with its extents, then scalars, in parameter order
    params: list[str] = [f"{prefix}* k"]
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            params.append(f"{_C_TYPES[p.type.c_name()] if isinstance(p.type, ty.ScalarType) else 'cl_float'} {p.name}")
            continue
        element = array.element
        base = _C_TYPES[ty.element_scalar(element).name]
        const = "" if array.is_written else "const "
        params.append(f"{const}{base}* {p.name}")
        if array.kind == "image":
            params += [f"int {p.name}_{e}" for e in ("width", "height", "depth")[: array.dims]]
        elif array.kind == "pointer":
            params.append(f"size_t {p.name}_length")

    def count_expr(array) -> str:
        lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
        if array.kind == "image":
            sizes = [f"(size_t){array.name}_{e}" for e in ("width", "height", "depth")[: array.dims]]
            return " * ".join(sizes + [str(lanes)])
        if array.kind == "array":
            return str(int(np.prod(array.shape)) * lanes)
        return f"{array.name}_length * {lanes}"

    body: list[str] = []
    body.append("    cl_int err = CL_SUCCESS;")
    body.append(f"    cl_mem mem[{max(1, len(info.arrays))}] = {{0}};")
    mem_index = {}
    for i, (n, array) in enumerate(info.arrays.items()):
        mem_index[n] = i
        base = _C_TYPES[ty.element_scalar(array.element).name]
        bytes_expr = f"({count_expr(array)}) * sizeof({base})"
        if n in plan.image_mem and array.kind == "array":
            body.extend(_array_image_lines(array, i))
        elif n in plan.image_mem:
            channels = "CL_RGBA" if isinstance(array.element, ty.VectorType) else "CL_R"
            ctype = _CHANNEL_TYPES[ty.element_scalar(array.element).name]
            body.append(f"    {{ /* '{n}' in image memory */")
            body.append(f"        cl_image_format fmt = {{{channels}, {ctype}}};")
            body.append("        cl_image_desc desc;")
            body.append("        memset(&desc, 0, sizeof(desc));")
            body.append(f"        desc.image_type = {'CL_MEM_OBJECT_IMAGE3D' if array.dims == 3 else 'CL_MEM_OBJECT_IMAGE2D'};")
            body.append(f"        desc.image_width = (size_t){n}_width;")
            body.append(f"        desc.image_height = (size_t){n}_height;")
            if array.dims == 3:
                body.append(f"        desc.image_depth = (size_t){n}_depth;")
            body.append(f"        mem[{i}] = clCreateImage(k->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc,"
                        f" (void*){n}, &err);")
            body.append("    }")
        else:
            flags = "CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR"
            body.append(f"    mem[{i}] = clCreateBuffer(k->context, {flags}, {bytes_expr}, (void*){n}, &err);")
        body.append("    if (err != CL_SUCCESS) goto done;")

    body.append("    {")
    body.append("        cl_uint a = 0;")
    scalar_types = {p.name: p.type for p in info.params}
    for a in args:
        if a.role in ("buffer", "image"):
            body.append(f"        err |= clSetKernelArg(k->kernel, a++, sizeof(cl_mem), &mem[{mem_index[a.param]}]);")
        elif a.role == "extent":
            axis = ("width", "height", "depth")[a.axis]
            body.append(f"        {{ cl_int v = {a.param}_{axis}; err |= clSetKernelArg(k->kernel, a++, sizeof v, &v); }}")
        elif a.role == "length":
            body.append(f"        {{ cl_int v = (cl_int){a.param}_length; err |= clSetKernelArg(k->kernel, a++, sizeof v, &v); }}")
        elif a.role == "tile":
            fp = analysis.footprints[a.param]
            element = info.arrays[a.param].element
            nbytes = element.dtype.itemsize * (element.width if isinstance(element, ty.VectorType) else 1)
            factors = [f"({plan.wg[d]} * {plan.span(d)} + {fp.halo_low[d] + fp.halo_high[d]})" for d in range(dims)]
            body.append(f"        err |= clSetKernelArg(k->kernel, a++, {nbytes} * {' * '.join(factors)}, NULL);")
        else:
            t = scalar_types[a.param]
            ctype = _C_TYPES[t.c_name()]
            body.append(f"        {{ {ctype} v = ({ctype}){a.param}; err |= clSetKernelArg(k->kernel, a++, sizeof v, &v); }}")
    body.append("    }")
    body.append("    if (err != CL_SUCCESS) goto done;")

    if info.grid:
        first = info.grid[0]
        grid = [f"(size_t){first}_{e}" for e in ("width", "height", "depth")[:dims]]
    else:
        grid = [str(s) for s in info.grid_size]
    body.append("    {")
    body.append(f"        size_t grid[{dims}] = {{{', '.join(grid)}}};")
    body.append(f"        const size_t per_item[{dims}] = {{{', '.join(map(str, plan.px))}}};")
    if plan.wg:
        body.append(f"        const size_t local[{dims}] = {{{', '.join(map(str, plan.wg))}}};")
    body.append(f"        size_t global[{dims}];")
    body.append(f"        for (int d = 0; d < {dims}; d++) {{")
    body.append("            global[d] = (grid[d] + per_item[d] - 1) / per_item[d];")
    if plan.wg:
        body.append("            global[d] = (global[d] + local[d] - 1) / local[d] * local[d];")
    body.append("        }")
    local_arg = "local" if plan.wg else "NULL"
    body.append(f"        err = clEnqueueNDRangeKernel(k->queue, k->kernel, {dims}, NULL, global, {local_arg}, 0, NULL, NULL);")
    body.append("        if (err != CL_SUCCESS) goto done;")
    body.append("    }")
    for n, array in info.arrays.items():
        if array.is_written:
            base = _C_TYPES[ty.element_scalar(array.element).name]
            body.append(f"    err = clEnqueueReadBuffer(k->queue, mem[{mem_index[n]}], CL_TRUE, 0, "
                        f"({count_expr(array)}) * sizeof({base}), {n}, 0, NULL, NULL);")
            body.append("    if (err != CL_SUCCESS) goto done;")
    body.append("    err = clFinish(k->queue);")
    body.append("done:")
    body.append(f"    for (int i = 0; i < {max(1, len(info.arrays))}; i++)")
    body.append("        if (mem[i]) clReleaseMemObject(mem[i]);")
    body.append("    return err;")

    guard = f"IMCL_{name.upper()}_H"
    signature = f"cl_int {prefix}_run({', '.join(params)})"
    header = f"""/* Generated by imagecl {__version__} from {program.filename}: kernel '{name}' tuned for
 * {select_name(device)}; configuration {json.dumps(dict(config), sort_keys=True)}.
 * Arrays are row-major: a 2-D image is height x width values (x fastest), 3-D depth x height x width;
 * uchar4/float4 pixels are 4 consecutive values. Outputs are written into the caller's arrays.
 * All functions return CL_SUCCESS (0) or an OpenCL error code. */
#ifndef {guard}
#define {guard}

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stddef.h>

typedef struct {{
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
}} {prefix};

/* Builds the tuned kernel for `device`; on a build failure, the log is printed to stderr. */
cl_int {prefix}_init({prefix}* k, cl_context context, cl_device_id device, cl_command_queue queue);

/* Uploads the inputs, runs the kernel once over the grid, and downloads every output. */
{signature};

void {prefix}_release({prefix}* k);

#endif
"""
    impl = f"""/* Generated by imagecl {__version__} from {program.filename}; see {prefix}.h. */
#include "{prefix}.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* {prefix}_source =
{_c_string(source)};

cl_int {prefix}_init({prefix}* k, cl_context context, cl_device_id device, cl_command_queue queue)
{{
    cl_int err = CL_SUCCESS;
    memset(k, 0, sizeof(*k));
    k->context = context;
    k->queue = queue;
    k->program = clCreateProgramWithSource(context, 1, &{prefix}_source, NULL, &err);
    if (err != CL_SUCCESS)
        return err;
    err = clBuildProgram(k->program, 1, &device, "", NULL, NULL);
    if (err != CL_SUCCESS) {{
        size_t size = 0;
        clGetProgramBuildInfo(k->program, device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size);
        char* log = (char*)malloc(size + 1);
        if (log) {{
            clGetProgramBuildInfo(k->program, device, CL_PROGRAM_BUILD_LOG, size, log, NULL);
            log[size] = 0;
            fprintf(stderr, "{prefix}: build failed:\\n%s\\n", log);
            free(log);
        }}
        return err;
    }}
    k->kernel = clCreateKernel(k->program, "{name}", &err);
    return err;
}}

{signature}
{{
{chr(10).join(body)}
}}

void {prefix}_release({prefix}* k)
{{
    if (k->kernel) clReleaseKernel(k->kernel);
    if (k->program) clReleaseProgram(k->program);
    memset(k, 0, sizeof(*k));
}}
"""
    return header, impl


def select_name(device) -> str:
    from .runtime.devices import select_device

    return select_device(device).name.strip()


def export_tuned(program, config: Mapping[str, int], out_dir: str | Path, device=None, problem_shape=None,
                 measured: Optional[float] = None, predicted: Optional[float] = None) -> list[Path]:
    """Write <kernel>.cl, <kernel>.json, imcl_<kernel>.h and imcl_<kernel>.c into `out_dir`."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    name = program.name
    config = program.space_for(device, problem_shape).complete(config)
    source = program.source_of(program.plan(config, device),
                               [f"configuration: {json.dumps(dict(config), sort_keys=True)}"])
    description = describe_variant(program, config, device, problem_shape, measured, predicted)
    header, impl = c_wrapper(program, config, device)
    files = {f"{name}.cl": source, f"{name}.json": json.dumps(description, indent=2) + "\n",
             f"imcl_{name}.h": header, f"imcl_{name}.c": impl}
    paths = []
    for filename, text in files.items():
        path = out / filename
        path.write_text(text)
        paths.append(path)
    return paths


__all__ = ["export_tuned", "describe_variant", "c_wrapper", "KernelArg"]
