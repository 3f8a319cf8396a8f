"""The tuned kernel for applications: OpenCL source, JSON description, and a C host wrapper that
gcc compiles against the system's OpenCL library and that reproduces the Python results."""
from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

import imagecl
from imagecl.export import export_tuned

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

DRIVER = """
#include "imcl_{name}.h"
#include <stdio.h>
#include <stdlib.h>

static void* slurp(const char* path, size_t* size)
{{
    FILE* f = fopen(path, "rb");
    if (!f) {{ perror(path); exit(3); }}
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void* data = malloc(*size);
    if (fread(data, 1, *size, f) != *size) exit(3);
    fclose(f);
    return data;
}}

int main(void)
{{
    cl_platform_id platform;
    cl_device_id device;
    cl_int err = clGetPlatformIDs(1, &platform, NULL);
    err |= clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL);
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue queue = clCreateCommandQueue(context, device, 0, &err);
    if (err != CL_SUCCESS) {{ fprintf(stderr, "OpenCL set-up failed: %d\\n", err); return 2; }}
    imcl_{name} k;
    err = imcl_{name}_init(&k, context, device, queue);
    if (err != CL_SUCCESS) {{ fprintf(stderr, "init failed: %d\\n", err); return 2; }}
    size_t size;
{body}
    if (err != CL_SUCCESS) {{ fprintf(stderr, "run failed: %d\\n", err); return 2; }}
{save}
    imcl_{name}_release(&k);
    clReleaseCommandQueue(queue);
    clReleaseContext(context);
    return 0;
}}
"""


def build_and_run(tmp_path: Path, prog, config, body: str, save: str) -> None:
    if shutil.which("gcc") is None:
        pytest.fail("gcc is missing: scripts/setup.sh installs it")
    out = tmp_path / "tuned"
    paths = export_tuned(prog, config, out)
    assert {p.name for p in paths} == {f"{prog.name}.cl", f"{prog.name}.json", f"imcl_{prog.name}.h",
                                        f"imcl_{prog.name}.c"}
    (out / "driver.c").write_text(DRIVER.format(name=prog.name, body=textwrap.indent(body, "    "),
                                                save=textwrap.indent(save, "    ")))
    compiled = subprocess.run(["gcc", "-std=c99", "-Wall", "-Werror", "-O1", "-o", str(out / "driver"),
                               str(out / "driver.c"), str(out / f"imcl_{prog.name}.c"), "-lOpenCL"],
                              capture_output=True, text=True)
    assert compiled.returncode == 0, compiled.stderr
    ran = subprocess.run([str(out / "driver")], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr


def test_sobel_with_image_and_local_memory(tmp_path):
    prog = imagecl.load(EXAMPLES / "sobel.icl")
    h, w = 29, 43
    img = np.random.default_rng(4).random((h, w), dtype=np.float32)
    img.tofile(tmp_path / "input.bin")
    config = {"wg_x": 8, "wg_y": 4, "px_x": 2, "px_y": 2, "interleaved": 1, "image_input": 1, "local_input": 1}
    body = f"""float* input = (float*)slurp("input.bin", &size);
float* dx = (float*)calloc({h * w}, sizeof(float));
float* dy = (float*)calloc({h * w}, sizeof(float));
err = imcl_sobel_run(&k, input, {w}, {h}, dx, {w}, {h}, dy, {w}, {h});"""
    save = f"""FILE* f = fopen("dx.bin", "wb"); fwrite(dx, sizeof(float), {h * w}, f); fclose(f);
f = fopen("dy.bin", "wb"); fwrite(dy, sizeof(float), {h * w}, f); fclose(f);"""
    build_and_run(tmp_path, prog, config, body, save)
    expected = prog(input=img)
    np.testing.assert_allclose(np.fromfile(tmp_path / "dx.bin", np.float32).reshape(h, w), expected["dx"], rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(np.fromfile(tmp_path / "dy.bin", np.float32).reshape(h, w), expected["dy"], rtol=1e-5,
                               atol=1e-6)
    description = json.loads((tmp_path / "tuned" / "sobel.json").read_text())
    assert description["configuration"]["local_input"] == 1 and description["kernel"] == "sobel"
    roles = [a["role"] for a in description["arguments"]]
    assert roles.count("tile") == 1 and roles[0] == "image"
    assert description["local_size"] == [8, 4] and description["layout"] == "interleaved"


def test_threshold_with_scalars_and_pointer(tmp_path):
    prog = imagecl.load(EXAMPLES / "threshold.icl")
    h, w = 17, 23
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, (h, w), dtype=np.uint8)
    thresholds = rng.integers(0, 256, w, dtype=np.uint8)
    img.tofile(tmp_path / "input.bin")
    thresholds.tofile(tmp_path / "thr.bin")
    config = {"px_y": 4, "wg_x": 4, "wg_y": 2}
    body = f"""unsigned char* input = (unsigned char*)slurp("input.bin", &size);
unsigned char* thr = (unsigned char*)slurp("thr.bin", &size);
unsigned char* output = (unsigned char*)calloc({h * w}, 1);
err = imcl_copy_run(&k, 200, 7, input, {w}, {h}, output, {w}, {h}, thr, {w});"""
    save = f"""FILE* f = fopen("out.bin", "wb"); fwrite(output, 1, {h * w}, f); fclose(f);"""
    build_and_run(tmp_path, prog, config, body, save)
    expected = prog(above=200, below=7, input=img, output=np.zeros_like(img), thresholds=thresholds)["output"]
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out.bin", np.uint8).reshape(h, w), expected)


def test_convolution_with_constant_filter_and_unrolling(tmp_path):
    prog = imagecl.load(EXAMPLES / "convolution.icl")
    h, w = 21, 30
    rng = np.random.default_rng(6)
    img = rng.random((h, w), dtype=np.float32)
    filt = rng.random((5, 5), dtype=np.float32)
    img.tofile(tmp_path / "input.bin")
    filt.tofile(tmp_path / "filter.bin")
    unroll = {p.name: 5 for p in prog.space.parameters if p.kind == "unroll"}
    config = {"constant_filter": 1, "px_x": 4, "wg_x": 4, "wg_y": 4, **unroll}
    body = f"""float* input = (float*)slurp("input.bin", &size);
float* filter = (float*)slurp("filter.bin", &size);
float* output = (float*)calloc({h * w}, sizeof(float));
err = imcl_convolution_run(&k, input, {w}, {h}, output, {w}, {h}, filter);"""
    save = f"""FILE* f = fopen("out.bin", "wb"); fwrite(output, sizeof(float), {h * w}, f); fclose(f);"""
    build_and_run(tmp_path, prog, config, body, save)
    expected = prog(input=img, filter=filt)["output"]
    np.testing.assert_allclose(np.fromfile(tmp_path / "out.bin", np.float32).reshape(h, w), expected, rtol=1e-5,
                               atol=1e-5)


def test_raycasting_with_array_in_image_and_local_memory(tmp_path):
    """The transfer function as a 1-D RGBA image copied into local memory, the ray loop unrolled."""
    prog = imagecl.load(EXAMPLES / "raycasting.icl")
    d, vh, vw, h, w = 9, 7, 11, 13, 17
    rng = np.random.default_rng(7)
    volume = (rng.random((d, vh, vw), dtype=np.float32) ** 2).astype(np.float32)
    transfer = rng.random((128, 4), dtype=np.float32)
    volume.tofile(tmp_path / "volume.bin")
    transfer.tofile(tmp_path / "transfer.bin")
    config = {"image_transfer": 1, "local_transfer": 1, "unroll_raycasting_l28": 4, "wg_x": 4, "wg_y": 2,
              "px_y": 2}
    body = f"""float* volume = (float*)slurp("volume.bin", &size);
float* transfer = (float*)slurp("transfer.bin", &size);
unsigned char* output = (unsigned char*)calloc({h * w * 4}, 1);
err = imcl_raycasting_run(&k, volume, {vw}, {vh}, {d}, output, {w}, {h}, transfer);"""
    save = f"""FILE* f = fopen("out.bin", "wb"); fwrite(output, 1, {h * w * 4}, f); fclose(f);"""
    build_and_run(tmp_path, prog, config, body, save)
    expected = prog(volume=volume, output=np.zeros((h, w, 4), np.uint8), transfer=transfer)["output"]
    assert expected.any()
    np.testing.assert_array_equal(np.fromfile(tmp_path / "out.bin", np.uint8).reshape(h, w, 4), expected)
    description = json.loads((tmp_path / "tuned" / "raycasting.json").read_text())
    transfer_arg = next(a for a in description["arguments"] if a["name"] == "transfer")
    assert transfer_arg["role"] == "image" and "image1d_t" in transfer_arg["type"]


def test_names_that_meet_opencl_c_and_the_wrapper(tmp_path):
    """Parameter names that are OpenCL C words (`kernel`, `local`, `INT_MAX`), the wrapper's
    former locals (`k`, `err`, `mem`, `a`) or another parameter's extent (`a_width`)."""
    prog = imagecl.compile(textwrap.dedent("""\
        #pragma imcl grid(a, out)
        #pragma imcl boundary_cond(a:clamped)
        void kernel(Image<float> a, Image<float> out, float k, int a_width, int err, int INT_MAX, float* local) {
            float mem = a[idx + 1][idy] + a[idx][idy - 1];
            out[idx][idy] = mem * k + a_width + err * INT_MAX + local[idx % 3];
        }
        """), filename="names.icl")
    h, w = 9, 11
    rng = np.random.default_rng(8)
    img = rng.random((h, w), dtype=np.float32)
    img.tofile(tmp_path / "a.bin")
    extra = np.array([0.5, 1.5, 2.5], np.float32)
    config = {"image_a": 1, "local_a": 1, "wg_x": 4, "wg_y": 2}
    body = f"""float* a = (float*)slurp("a.bin", &size);
float local[3] = {{0.5f, 1.5f, 2.5f}};
float* out = (float*)calloc({h * w}, sizeof(float));
err = imcl_kernel_run(&k, a, {w}, {h}, out, {w}, {h}, 2.0f, 5, 3, 7, local, 3);"""
    save = f"""FILE* f = fopen("out.bin", "wb"); fwrite(out, sizeof(float), {h * w}, f); fclose(f);"""
    build_and_run(tmp_path, prog, config, body, save)
    expected = prog(a=img, k=2.0, a_width=5, err=3, INT_MAX=7, local=extra, config=config)["out"]
    np.testing.assert_allclose(np.fromfile(tmp_path / "out.bin", np.float32).reshape(h, w), expected, rtol=1e-6)
    description = json.loads((tmp_path / "tuned" / "kernel.json").read_text())
    assert description["kernel"] == "kernel" and description["opencl_kernel"] == "imcl_v_kernel_"
