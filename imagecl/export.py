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
import re
import time
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from . import __version__, escape
from .codegen.variant import KernelArg, kernel_args, tile_bytes_at_launch
from .ir import types as ty
from .ir.names import renamed
from .outputs import check_output, output_folder, write_atomic

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
    from .tuned import program_key

    d = describe(select_device(device))
    return {
        "generator": f"imagecl {__version__}",
        "program": program.filename,
        "program_key": program_key(info.unit),  # lets `imagecl.load(folder)` check the program is the one tuned
        "kernel": program.name,
        "opencl_kernel": program.kernel_symbol,
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
    """`text` as adjacent C string literals, one per line, so the embedded source stays readable."""
    lines = text.split("\n")
    return "\n".join("    " + escape.c_string(line + ("\n" if i < len(lines) - 1 else ""))
                     for i, line in enumerate(lines))


def _array_image_lines(array, index: int, host_name: str) -> list[str]:
    """A fixed-size array in image memory: a 1-D image, or a 2-D one M wide and N high for a[N][M]."""
    lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
    channels = "CL_RGBA" if lanes == 4 else "CL_R"
    ctype = _CHANNEL_TYPES[ty.element_scalar(array.element).name]
    lines = [f"    {{ /* the array '{escape.comment(array.name)}' in image memory */",
             f"        cl_image_format imcl_fmt = {{{channels}, {ctype}}};",
             "        cl_image_desc imcl_desc;",
             "        memset(&imcl_desc, 0, sizeof(imcl_desc));",
             f"        imcl_desc.image_type = {'CL_MEM_OBJECT_IMAGE1D' if len(array.shape) == 1 else 'CL_MEM_OBJECT_IMAGE2D'};",
             f"        imcl_desc.image_width = {array.shape[-1]};"]
    if len(array.shape) == 2:
        lines.append(f"        imcl_desc.image_height = {array.shape[0]};")
    lines.append(f"        imcl_mem[{index}] = clCreateImage(imcl_k->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &imcl_fmt, &imcl_desc,"
                 f" (void*){host_name}, &imcl_err);")
    lines.append("    }")
    return lines


def _host_names(info):
    """C identifiers of the wrapper's parameters: the .icl names, renamed where they would meet a
    word of OpenCL/C (as in the kernel) or of the OpenCL host API (cl*, CL_*, memset); the
    extents `<name>_width` etc. get the `imcl_` prefix where they would meet another name. The
    wrapper's own locals all start with `imcl_`, which no user name keeps."""
    hn = {}
    for p in info.params:
        c = info.c_name(p.name)
        if re.match(r"cl[A-Z_]|CL_", c) or c in ("memset", "malloc", "free", "fprintf", "stderr"):
            c = renamed(p.name)
        hn[p.name] = c
    taken = set(hn.values())

    def derived(name: str, what: str) -> str:
        plain = f"{hn[name]}_{what}"
        return plain if plain not in taken else f"imcl_{name}_{what}"

    return hn, derived


def c_wrapper(program, config: Mapping[str, int], device=None) -> tuple[str, str]:
    """(header, implementation) of imcl_a C host wrapper for the tuned variant."""
    plan = program.plan(config, device)
    info = program.info
    analysis = program.analysis_for(dict(plan.tunables))
    name = escape.c_identifier(program.name, "the kernel's name")
    prefix = f"imcl_{name}"
    source = program.source_of(plan, [f"configuration: {json.dumps(dict(config), sort_keys=True)}"])
    args = kernel_args(info, plan)
    dims = info.grid_dims

    hn, derived = _host_names(info)

    # the run() signature: every array with its extents, then scalars, in parameter order
    params: list[str] = [f"{prefix}* imcl_k"]
    for p in info.params:
        array = info.arrays.get(p.name)
        if array is None:
            params.append(f"{_C_TYPES[p.type.c_name()] if isinstance(p.type, ty.ScalarType) else 'cl_float'} {hn[p.name]}")
            continue
        element = array.element
        base = _C_TYPES[ty.element_scalar(element).name]
        const = "" if array.is_written else "const "
        params.append(f"{const}{base}* {hn[p.name]}")
        if array.kind == "image":
            params += [f"int {derived(p.name, e)}" for e in ("width", "height", "depth")[: array.dims]]
        elif array.kind == "pointer":
            params.append(f"size_t {derived(p.name, 'length')}")

    def count_expr(array) -> str:
        lanes = array.element.width if isinstance(array.element, ty.VectorType) else 1
        if array.kind == "image":
            sizes = [f"(size_t){derived(array.name, e)}" for e in ("width", "height", "depth")[: array.dims]]
            return " * ".join(sizes + [str(lanes)])
        if array.kind == "array":
            return str(int(np.prod(array.shape)) * lanes)
        return f"{derived(array.name, 'length')} * {lanes}"

    body: list[str] = []
    body.append("    cl_int imcl_err = CL_SUCCESS;")
    body.append(f"    cl_mem imcl_mem[{max(1, len(info.arrays))}] = {{0}};")
    mem_index = {}
    for i, (n, array) in enumerate(info.arrays.items()):
        mem_index[n] = i
        base = _C_TYPES[ty.element_scalar(array.element).name]
        bytes_expr = f"({count_expr(array)}) * sizeof({base})"
        if n in plan.image_mem and array.kind == "array":
            body.extend(_array_image_lines(array, i, hn[n]))
        elif n in plan.image_mem:
            channels = "CL_RGBA" if isinstance(array.element, ty.VectorType) else "CL_R"
            ctype = _CHANNEL_TYPES[ty.element_scalar(array.element).name]
            body.append(f"    {{ /* '{escape.comment(n)}' in image memory */")
            body.append(f"        cl_image_format imcl_fmt = {{{channels}, {ctype}}};")
            body.append("        cl_image_desc imcl_desc;")
            body.append("        memset(&imcl_desc, 0, sizeof(imcl_desc));")
            body.append(f"        imcl_desc.image_type = {'CL_MEM_OBJECT_IMAGE3D' if array.dims == 3 else 'CL_MEM_OBJECT_IMAGE2D'};")
            for e in ("width", "height", "depth")[: array.dims]:
                body.append(f"        imcl_desc.image_{e} = (size_t){derived(n, e)};")
            body.append(f"        imcl_mem[{i}] = clCreateImage(imcl_k->context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &imcl_fmt, &imcl_desc,"
                        f" (void*){hn[n]}, &imcl_err);")
            body.append("    }")
        else:
            flags = "CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR"
            body.append(f"    imcl_mem[{i}] = clCreateBuffer(imcl_k->context, {flags}, {bytes_expr}, (void*){hn[n]}, &imcl_err);")
        body.append("    if (imcl_err != CL_SUCCESS) goto imcl_done;")

    body.append("    {")
    body.append("        cl_uint imcl_a = 0;")
    scalar_types = {p.name: p.type for p in info.params}
    for a in args:
        if a.role in ("buffer", "image"):
            body.append(f"        imcl_err |= clSetKernelArg(imcl_k->kernel, imcl_a++, sizeof(cl_mem), &imcl_mem[{mem_index[a.param]}]);")
        elif a.role == "extent":
            axis = ("width", "height", "depth")[a.axis]
            body.append(f"        {{ cl_int imcl_v = {derived(a.param, axis)}; "
                        "imcl_err |= clSetKernelArg(imcl_k->kernel, imcl_a++, sizeof imcl_v, &imcl_v); }")
        elif a.role == "length":
            body.append(f"        {{ cl_int imcl_v = (cl_int){derived(a.param, 'length')}; "
                        "imcl_err |= clSetKernelArg(imcl_k->kernel, imcl_a++, sizeof imcl_v, &imcl_v); }")
        elif a.role == "tile":  # the local-memory tile, sized as the runtime sizes it
            nbytes = tile_bytes_at_launch(info, plan, analysis, a.param)
            body.append(f"        imcl_err |= clSetKernelArg(imcl_k->kernel, imcl_a++, {nbytes}, NULL);")
        else:
            t = scalar_types[a.param]
            ctype = _C_TYPES[t.c_name()]
            body.append(f"        {{ {ctype} imcl_v = ({ctype}){hn[a.param]}; "
                        "imcl_err |= clSetKernelArg(imcl_k->kernel, imcl_a++, sizeof imcl_v, &imcl_v); }")
    body.append("    }")
    body.append("    if (imcl_err != CL_SUCCESS) goto imcl_done;")

    if info.grid:
        first = info.grid[0]
        grid = [f"(size_t){derived(first, e)}" for e in ("width", "height", "depth")[:dims]]
    else:
        grid = [str(s) for s in info.grid_size]
    body.append("    {")
    body.append(f"        size_t imcl_grid[{dims}] = {{{', '.join(grid)}}};")
    body.append(f"        const size_t imcl_per_item[{dims}] = {{{', '.join(map(str, plan.px))}}};")
    if plan.wg:
        body.append(f"        const size_t imcl_local[{dims}] = {{{', '.join(map(str, plan.wg))}}};")
    body.append(f"        size_t imcl_global[{dims}];")
    body.append(f"        for (int imcl_d = 0; imcl_d < {dims}; imcl_d++) {{")
    body.append("            imcl_global[imcl_d] = (imcl_grid[imcl_d] + imcl_per_item[imcl_d] - 1) / imcl_per_item[imcl_d];")
    if plan.wg:
        body.append("            imcl_global[imcl_d] = (imcl_global[imcl_d] + imcl_local[imcl_d] - 1) / imcl_local[imcl_d] * imcl_local[imcl_d];")
    body.append("        }")
    local_arg = "imcl_local" if plan.wg else "NULL"
    body.append(f"        imcl_err = clEnqueueNDRangeKernel(imcl_k->queue, imcl_k->kernel, {dims}, NULL, imcl_global, {local_arg}, 0, NULL, NULL);")
    body.append("        if (imcl_err != CL_SUCCESS) goto imcl_done;")
    body.append("    }")
    for n, array in info.arrays.items():
        if array.is_written:
            base = _C_TYPES[ty.element_scalar(array.element).name]
            body.append(f"    imcl_err = clEnqueueReadBuffer(imcl_k->queue, imcl_mem[{mem_index[n]}], CL_TRUE, 0, "
                        f"({count_expr(array)}) * sizeof({base}), {hn[n]}, 0, NULL, NULL);")
            body.append("    if (imcl_err != CL_SUCCESS) goto imcl_done;")
    body.append("    imcl_err = clFinish(imcl_k->queue);")
    body.append("imcl_done:")
    body.append(f"    for (int imcl_i = 0; imcl_i < {max(1, len(info.arrays))}; imcl_i++)")
    body.append("        if (imcl_mem[imcl_i]) clReleaseMemObject(imcl_mem[imcl_i]);")
    body.append("    return imcl_err;")

    guard = f"IMCL_{name.upper()}_H"
    signature = f"cl_int {prefix}_run({', '.join(params)})"
    origin, device_name = escape.comment(program.filename), escape.comment(select_name(device))
    configuration = escape.comment(json.dumps(dict(config), sort_keys=True))
    header = f"""/* Generated by imagecl {__version__} from {origin}: kernel '{name}' tuned for
 * {device_name}; configuration {configuration}.
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
    impl = f"""/* Generated by imagecl {__version__} from {origin}; see {prefix}.h. */
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
    k->kernel = clCreateKernel(k->program, {escape.c_string(escape.c_identifier(program.kernel_symbol))}, &err);
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
    name = program.name
    config = program.space_for(device, problem_shape).complete(config)
    source = program.source_of(program.plan(config, device),
                               [f"configuration: {json.dumps(dict(config), sort_keys=True)}"])
    description = describe_variant(program, config, device, problem_shape, measured, predicted)
    header, impl = c_wrapper(program, config, device)
    texts = [source, json.dumps(description, indent=2) + "\n", header, impl]
    return [write_atomic(out / filename, text) for filename, text in zip(names, texts)]


__all__ = ["export_tuned", "describe_variant", "c_wrapper", "KernelArg"]
