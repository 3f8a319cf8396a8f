#!/usr/bin/env bash
# Prepares Halide for the GPU host (issue 23's peers), where no package registry can be reached.
# Run from the project root on a machine with registry access:
#
#     bash scripts/gpu_halide.sh
#
# Halide's wheel (69 MB) and the tracked tree (about 29 MB) exceed what one device call carries
# (64 MiB), so the package is unpacked, stripped of what Python does not load (headers, static
# libraries, tools), libHalide.so compressed with xz, and the result split into two parts:
# .gpu-halide/a and .gpu-halide/b (git-ignored), with .gpu-halide/setup.sh. On the host, two calls
# back to back (the machine is given back after 30 s idle):
#
#     run(command="bash .gpu-halide/setup.sh", carry=[".gpu-halide/a", ".gpu-halide/setup.sh"])
#     run(command="bash .gpu/setup.sh && bash .gpu-halide/setup.sh --complete && \
#                  export PYTHONPATH=$PWD:/tmp/halide-site ... && python3 benchmarks/peers.py ...",
#         carry=[".gpu", ".gpu-halide/b", ".gpu-halide/setup.sh"])
#
# Each call copies its part to /tmp/halide-parts; the second unpacks both into /tmp/halide-site
# (with --complete it fails if the first part is gone: the machine was given back in between).
# Sizes: a part is at most 26 MiB; with the tracked tree and .gpu, about 59 MB of the 64 MiB.
set -euo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
version="${HALIDE_VERSION:-21.0.0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --only-binary=:all: --python-version 3.12 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --no-deps \
  "halide==$version" -d "$work"
mkdir -p "$work/x"
(cd "$work/x" && python3 -m zipfile -e "$work"/halide-*.whl .)
rm -rf "$work/x/halide/bin" "$work/x/halide/include" "$work/x/halide/share" "$work/x/halide/lib64/cmake" \
  "$work/x"/halide/lib64/*.a "$work/x"/halide-*.data
xz -T0 -9 "$work/x/halide/lib64/libHalide.so"
(cd "$work/x" && tar cf - halide halide-*.dist-info) | split -b 26M - "$work/part."
if [ ! -e "$work/part.ab" ] || [ -e "$work/part.ac" ]; then
  echo "Halide $version does not make two parts of at most 26 MiB: change the split" >&2
  exit 1
fi
rm -rf .gpu-halide && mkdir -p .gpu-halide/a .gpu-halide/b  # git-ignored (.gitignore)
mv "$work/part.aa" .gpu-halide/a/
mv "$work/part.ab" .gpu-halide/b/
cat > .gpu-halide/setup.sh <<'EOF'
#!/usr/bin/env bash
# On the GPU host: copies the part this call carries to /tmp/halide-parts; once both parts are
# there, unpacks Halide into /tmp/halide-site (put it on PYTHONPATH). --complete: fail unless
# Halide is unpacked after this call.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p /tmp/halide-parts
cp "$here"/a/part.* "$here"/b/part.* /tmp/halide-parts/ 2>/dev/null || true
if [ -e /tmp/halide-parts/part.aa ] && [ -e /tmp/halide-parts/part.ab ] \
    && [ ! -e /tmp/halide-site/halide/lib64/libHalide.so ]; then
  mkdir -p /tmp/halide-site && cat /tmp/halide-parts/part.* | tar xf - -C /tmp/halide-site
  xz -d -T0 /tmp/halide-site/halide/lib64/libHalide.so.xz
fi
if [ -e /tmp/halide-site/halide/lib64/libHalide.so ]; then
  echo "halide: unpacked in /tmp/halide-site"
elif [ "${1:-}" = "--complete" ]; then
  echo "halide: only $(ls /tmp/halide-parts | tr '\n' ' ')here; carry the other part in the call before" >&2
  exit 1
else
  echo "halide: one part so far"
fi
EOF
du -sh .gpu-halide/a .gpu-halide/b
