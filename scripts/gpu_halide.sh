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
#     run(command="bash .gpu/setup.sh && bash .gpu-halide/setup.sh && \
#                  export PYTHONPATH=$PWD:/tmp/halide-site ... && python3 benchmarks/peers.py ...",
#         carry=[".gpu", ".gpu-halide/b", ".gpu-halide/setup.sh"])
#
# Each call copies its part to /tmp/halide-parts; the second unpacks both into /tmp/halide-site.
set -euo pipefail
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
rm -rf .gpu-halide && mkdir -p .gpu-halide/a .gpu-halide/b
if gitdir=$(git rev-parse --git-dir 2>/dev/null); then
  mkdir -p "$gitdir/info"
  grep -qx '/.gpu-halide/' "$gitdir/info/exclude" 2>/dev/null || echo '/.gpu-halide/' >> "$gitdir/info/exclude"
fi
(cd "$work/x" && tar cf - halide halide-*.dist-info) | split -b 26M - "$work/part."
mv "$work/part.aa" .gpu-halide/a/
mv "$work/part.ab" .gpu-halide/b/
[ ! -e "$work/part.ac" ] || { echo "Halide no longer fits two parts of 26 MB" >&2; exit 1; }
cat > .gpu-halide/setup.sh <<'EOF'
#!/usr/bin/env bash
# On the GPU host: copies the part this call carries to /tmp/halide-parts; once both parts are
# there, unpacks Halide into /tmp/halide-site (put it on PYTHONPATH).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mkdir -p /tmp/halide-parts
cp "$here"/a/part.* "$here"/b/part.* /tmp/halide-parts/ 2>/dev/null || true
if [ -e /tmp/halide-parts/part.aa ] && [ -e /tmp/halide-parts/part.ab ] \
    && [ ! -e /tmp/halide-site/halide/lib64/libHalide.so ]; then
  mkdir -p /tmp/halide-site && cat /tmp/halide-parts/part.* | tar xf - -C /tmp/halide-site
  xz -d -T0 /tmp/halide-site/halide/lib64/libHalide.so.xz
fi
ls /tmp/halide-site/halide/lib64 2>/dev/null || echo "halide: one part so far"
EOF
du -sh .gpu-halide/a .gpu-halide/b
