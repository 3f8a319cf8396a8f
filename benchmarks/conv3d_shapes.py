"""Hand-written OpenCL shapes of the 3x3x3 convolution (the peer workload `conv3d`), timed against a
copy kernel on one device: how close to the copy rate a 3-D stencil can get, and which shape gets
there, before the compiler is taught it (issue 23: the tuned conv3d reaches 28% of the copy rate).

    python benchmarks/conv3d_shapes.py --device nvidia [--size 256] [--out results.json]

Shapes (the volume is [z][y][x], x fastest, clamped at the border like the workload):
- point: one output per work-item, 27 loads through the caches (the naive variant's shape);
- march: a work-item walks NZ outputs along z; each plane's 3x3 neighbourhood is loaded once (9
  loads) and added into the three outputs it belongs to (three running sums);
- march_local: as march, each plane staged in local memory by the work-group first, so that a
  value is read from global memory once per work-group instead of 9 times through the caches;
- point_fast, march_fast: point and march with unclamped reads where the neighbourhood lies
  inside (the interior fast path's trade: no clamps, simpler addresses).
Each is checked against an independent NumPy reference before it is timed. Results of one H100
run: BENCHMARKS.md (issue 23's copy-rate bullet), raw benchmarks/results/conv3d-shapes-h100.json.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pyopencl as cl

SOURCE = r"""
#define N {N}
inline int cl_(int v) {{ return clamp(v, 0, N - 1); }}
inline float at(const __global float* restrict in, int x, int y, int z) {{
    return in[((size_t)cl_(z) * N + cl_(y)) * N + cl_(x)];
}}

__kernel void copy4(const __global float4* restrict in, __global float4* restrict out) {{
    size_t i = get_global_id(0);
    out[i] = in[i];
}}

__kernel void point(const __global float* restrict in, __global float* restrict out,
                    __constant float* f) {{
    int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    float s = 0.0f;
    for (int k = -1; k <= 1; k++)
      for (int j = -1; j <= 1; j++)
        for (int i = -1; i <= 1; i++)
          s += at(in, x - i, y - j, z - k) * f[(k + 1) * 9 + (j + 1) * 3 + i + 1];
    out[((size_t)z * N + y) * N + x] = s;
}}

// the 2-D part of plane p's contribution with filter slice kk (output plane p + kk - 1... see below)
#define PLANE(v, kk) ( \
    v[0] * f[kk * 9 + 8] + v[1] * f[kk * 9 + 7] + v[2] * f[kk * 9 + 6] + \
    v[3] * f[kk * 9 + 5] + v[4] * f[kk * 9 + 4] + v[5] * f[kk * 9 + 3] + \
    v[6] * f[kk * 9 + 2] + v[7] * f[kk * 9 + 1] + v[8] * f[kk * 9 + 0])

// out[z] = sum_k sum_j sum_i in[z - k][y - j][x - i] f[k+1][j+1][i+1]: plane p = z - k feeds output z with
// slice kk = k + 1 = z - p + 1, i.e. output p - 1 with slice 0, output p with slice 1, output p + 1 with slice 2
__kernel void march(const __global float* restrict in, __global float* restrict out, __constant float* f) {{
    int x = get_global_id(0), y = get_global_id(1);
    int z0 = get_global_id(2) * NZ;
    float below = 0.0f, here = 0.0f;  // running sums of outputs p - 1 and p
    for (int p = z0 - 1; p <= z0 + NZ; p++) {{
        float v[9];
        for (int jj = 0; jj < 3; jj++)
          for (int ii = 0; ii < 3; ii++)
            v[jj * 3 + ii] = at(in, x + ii - 1, y + jj - 1, p);
        float above = PLANE(v, 2);  // output p + 1
        float done = below + PLANE(v, 0);  // output p - 1 is complete
        here += PLANE(v, 1);
        if (p - 1 >= z0) out[((size_t)(p - 1) * N + y) * N + x] = done;
        below = here; here = above;
    }}
}}

__kernel __attribute__((reqd_work_group_size(WX, WY, 1)))
void march_local(const __global float* restrict in, __global float* restrict out, __constant float* f) {{
    __local float tile[WY + 2][WX + 2];
    int lx = get_local_id(0), ly = get_local_id(1);
    int x0 = get_group_id(0) * WX, y0 = get_group_id(1) * WY;
    int x = x0 + lx, y = y0 + ly;
    int z0 = get_global_id(2) * NZ;
    float below = 0.0f, here = 0.0f;
    for (int p = z0 - 1; p <= z0 + NZ; p++) {{
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int t = ly * WX + lx; t < (WX + 2) * (WY + 2); t += WX * WY) {{
            int ty = t / (WX + 2), tx = t % (WX + 2);
            tile[ty][tx] = at(in, x0 + tx - 1, y0 + ty - 1, p);
        }}
        barrier(CLK_LOCAL_MEM_FENCE);
        float v[9];
        for (int jj = 0; jj < 3; jj++)
          for (int ii = 0; ii < 3; ii++)
            v[jj * 3 + ii] = tile[ly + jj][lx + ii];
        float above = PLANE(v, 2);
        float done = below + PLANE(v, 0);
        here += PLANE(v, 1);
        if (p - 1 >= z0) out[((size_t)(p - 1) * N + y) * N + x] = done;
        below = here; here = above;
    }}
}}
// as march, with the interior's reads unclamped: a work-item whose 3x3 column stays inside in x and y reads
// through a pointer that moves one plane a step (32-bit offsets; only the plane is clamped, at the ends)
__kernel void march_fast(const __global float* restrict in, __global float* restrict out, __constant float* f) {{
    int x = get_global_id(0), y = get_global_id(1);
    int z0 = get_global_id(2) * NZ;
    float below = 0.0f, here = 0.0f;
    bool inside = x > 0 && x < N - 1 && y > 0 && y < N - 1;
    for (int p = z0 - 1; p <= z0 + NZ; p++) {{
        float v[9];
        if (inside) {{
            const __global float* c = in + (cl_(p) * N + y) * N + x;
            for (int jj = 0; jj < 3; jj++)
              for (int ii = 0; ii < 3; ii++)
                v[jj * 3 + ii] = c[(jj - 1) * N + ii - 1];
        }} else {{
            for (int jj = 0; jj < 3; jj++)
              for (int ii = 0; ii < 3; ii++)
                v[jj * 3 + ii] = at(in, x + ii - 1, y + jj - 1, p);
        }}
        float above = PLANE(v, 2);
        float done = below + PLANE(v, 0);
        here += PLANE(v, 1);
        if (p - 1 >= z0) out[((p - 1) * N + y) * N + x] = done;
        below = here; here = above;
    }}
}}

// one output per work-item, its 27 reads unclamped inside
__kernel void point_fast(const __global float* restrict in, __global float* restrict out, __constant float* f) {{
    int x = get_global_id(0), y = get_global_id(1), z = get_global_id(2);
    float s = 0.0f;
    if (x > 0 && x < N - 1 && y > 0 && y < N - 1 && z > 0 && z < N - 1) {{
        const __global float* c = in + (z * N + y) * N + x;
        for (int k = -1; k <= 1; k++)
          for (int j = -1; j <= 1; j++)
            for (int i = -1; i <= 1; i++)
              s += c[-(k * N + j) * N - i] * f[(k + 1) * 9 + (j + 1) * 3 + i + 1];
    }} else {{
        for (int k = -1; k <= 1; k++)
          for (int j = -1; j <= 1; j++)
            for (int i = -1; i <= 1; i++)
              s += at(in, x - i, y - j, z - k) * f[(k + 1) * 9 + (j + 1) * 3 + i + 1];
    }}
    out[(z * N + y) * N + x] = s;
}}
"""


def reference(volume: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """out[z, y, x] = sum over k, j, i of volume[z - k, y - j, x - i] * weights[k + 1, j + 1, i + 1],
    clamped: NumPy alone (an independent check of every shape)."""
    padded = np.pad(volume, 1, mode="edge").astype(np.float64)
    n = volume.shape[0]
    out = np.zeros(volume.shape, np.float64)
    for k in (-1, 0, 1):
        for j in (-1, 0, 1):
            for i in (-1, 0, 1):
                out += padded[1 - k:1 - k + n, 1 - j:1 - j + n, 1 - i:1 - i + n] * weights[k + 1, j + 1, i + 1]
    return out.astype(np.float32)


def pick_device(kind: str) -> cl.Device:
    for platform in cl.get_platforms():
        for device in platform.get_devices():
            if kind.lower() in (platform.name + device.name).lower():
                return device
    raise SystemExit(f"no OpenCL device matches {kind!r}")


def time_kernel(queue: cl.CommandQueue, kernel: cl.Kernel, global_size: tuple, local_size: "tuple | None",
                args: tuple, repeats: int) -> float:
    kernel(queue, global_size, local_size, *args).wait()
    times = []
    for _ in range(repeats):
        event = kernel(queue, global_size, local_size, *args)
        event.wait()
        times.append((event.profile.end - event.profile.start) * 1e-9)
    return float(np.median(times))


def main(argv: "list[str] | None" = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="nvidia")
    parser.add_argument("--size", type=int, default=256, help="the volume's side (a multiple of 16, at most 1024: 32-bit offsets)")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    n = args.size
    if not 16 <= n <= 1024 or n % 16:
        parser.error("--size: a multiple of 16 from 16 to 1024")
    device = pick_device(args.device)
    context = cl.Context([device])
    queue = cl.CommandQueue(context, properties=cl.command_queue_properties.PROFILING_ENABLE)
    rng = np.random.default_rng(0)
    volume = rng.random((n, n, n), dtype=np.float32)
    weights = rng.random((3, 3, 3), dtype=np.float32)
    weights /= weights.sum()
    expected = reference(volume, weights)
    mf = cl.mem_flags
    d_in = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=volume)
    d_out = cl.Buffer(context, mf.WRITE_ONLY, volume.nbytes)
    d_f = cl.Buffer(context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=weights.ravel())
    moved = 2 * volume.nbytes

    results = []
    programs: dict = {}  # built once per set of options

    def run(name, options, kernel_name, global_size, local_size, extra):
        if any(g == 0 for g in global_size) or (local_size is not None and
                                                 any(g % l for g, l in zip(global_size, local_size))):
            results.append({"shape": name, "error": "the grid does not divide into these work-groups"})
            return
        # NaN in every element first: a shape that leaves an element unwritten fails the check
        cl.enqueue_fill_buffer(queue, d_out, np.float32(np.nan), 0, volume.nbytes).wait()
        try:
            if options not in programs:  # shapes of one kernel differ in the launch only
                programs[options] = cl.Program(context, SOURCE.format(N=n)).build(options=options)
            program = programs[options]
        except cl.Error as e:
            results.append({"shape": name, "error": str(e)[:200]})
            return
        kernel = cl.Kernel(program, kernel_name)
        argsl = (d_in, d_out) + extra
        try:
            seconds = time_kernel(queue, kernel, global_size, local_size, argsl, args.repeats)
        except cl.Error as e:
            results.append({"shape": name, "error": str(e)[:200]})
            return
        record = {"shape": name, "ms": seconds * 1e3}
        if kernel_name != "copy4":
            out = np.empty_like(volume)
            cl.enqueue_copy(queue, out, d_out)
            record["max_error"] = float(np.abs(out - expected).max())
            record["ok"] = bool(np.allclose(out, expected, rtol=1e-5, atol=1e-5))
        results.append(record)

    run("copy (float4)", "-DNZ=1 -DWX=1 -DWY=1", "copy4", (n ** 3 // 4,), (256,), ())
    if "ms" not in results[0]:
        raise SystemExit(f"the copy kernel did not run: {results[0]['error']}")
    copy_seconds = results[0]["ms"] * 1e-3
    for wg in [(32, 4, 1), (32, 8, 1), (64, 4, 1), (128, 2, 1), (256, 1, 1), (32, 4, 2), None]:
        run(f"point wg {wg}", "-DNZ=1 -DWX=1 -DWY=1", "point", (n, n, n), wg, (d_f,))
    for nz in (4, 8, 16, 32, 64):
        for wg in [(32, 4), (32, 8), (64, 4), (128, 2), (256, 1)]:
            run(f"march nz {nz} wg {wg}", f"-DNZ={nz} -DWX=1 -DWY=1", "march", (n, n, n // nz), wg + (1,), (d_f,))
    for wg in [(32, 4, 1), (64, 4, 1), (128, 2, 1), (256, 1, 1)]:
        run(f"point_fast wg {wg}", "-DNZ=1 -DWX=1 -DWY=1", "point_fast", (n, n, n), wg, (d_f,))
    for nz in (4, 8, 16, 32):
        for wg in [(32, 4), (64, 4), (128, 2), (256, 1), (32, 8)]:
            run(f"march_fast nz {nz} wg {wg}", f"-DNZ={nz} -DWX=1 -DWY=1", "march_fast", (n, n, n // nz), wg + (1,),
                (d_f,))
    for nz in (8, 16, 32):
        for wg in [(32, 4), (32, 8), (64, 4)]:
            run(f"march_local nz {nz} wg {wg}", f"-DNZ={nz} -DWX={wg[0]} -DWY={wg[1]}", "march_local",
                (n, n, n // nz), wg + (1,), (d_f,))
    for r in results:
        if "ms" in r:
            r["copy_share"] = copy_seconds / (r["ms"] * 1e-3)
        print(json.dumps(r), flush=True)
    summary = {"device": device.name, "size": n, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "copy_gb_s": moved / copy_seconds / 1e9, "results": results}
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(summary, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
