"""Build imagecl's wheel and source distribution and check that they work without this checkout.

    python scripts/check_dist.py [--keep DIR]

The wheel must hold every module of imagecl, imagecl.tuner, the grammar and the templates; the
sdist must hold the examples too. The wheel is then installed on its own (no dependencies: the
running interpreter's are used) into a scratch folder and, from another working directory, an
example is compiled and its OpenCL generated, so nothing reads the checkout. Exits 1 on any
difference. (The build uses pip's isolated build, so it needs the package index that `pip
install .` needs; tests/test_practical.py checks the sdist offline.)
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# where each source folder lands inside the installed package
LAYOUT = {"imagecl": "imagecl", "tuner": "imagecl/tuner", "grammar": "imagecl/grammar",
          "templates": "imagecl/templates"}


def expected_wheel_files() -> set[str]:
    files = set()
    for top, dest in LAYOUT.items():
        for p in (ROOT / top).rglob("*"):
            if p.is_file() and "__pycache__" not in p.parts and p.suffix in (".py", ".lark", ".j2"):
                files.add(f"{dest}/{p.relative_to(ROOT / top).as_posix()}")
    return files


def expected_sdist_files() -> set[str]:
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "examples").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts} | {"grammar/imagecl.lark", "templates/kernel.cl.j2"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="build into this folder (default: a temporary one)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="imagecl-dist-") as scratch:
        out = Path(args.keep or scratch)
        # a clean copy: an earlier build's *.egg-info/SOURCES.txt would add its files to what is built
        clean = Path(scratch) / "src"
        shutil.copytree(ROOT, clean, ignore=shutil.ignore_patterns(".venv", "build", "dist", "*.egg-info",
                                                                     "__pycache__", ".git", ".hypothesis", "out"))
        subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(clean), "-w", str(out)],
                       check=True)
        subprocess.run([sys.executable, "-c", "import setuptools.build_meta as b, sys; b.build_sdist(sys.argv[1])",
                        str(out)], check=True, cwd=clean, stdout=subprocess.DEVNULL)
        wheel = next(out.glob("imagecl-*.whl"))
        sdist = next(out.glob("imagecl-*.tar.gz"))
        problems = []
        in_wheel = set(zipfile.ZipFile(wheel).namelist())
        problems += [f"wheel lacks {f}" for f in sorted(expected_wheel_files() - in_wheel)]
        with tarfile.open(sdist) as tar:
            in_sdist = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        problems += [f"sdist lacks {f}" for f in sorted(expected_sdist_files() - in_sdist)]
        target = Path(scratch) / "installed"
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
                       check=True)
        probe = ("import imagecl, sys; p = imagecl.compile(open(sys.argv[1]).read(), 'sobel.icl'); "
                 "assert imagecl.__file__.startswith(sys.argv[2]), imagecl.__file__; "
                 "assert '__kernel' in p.opencl_source(); print('ok')")
        run = subprocess.run([sys.executable, "-c", probe, str(ROOT / "examples" / "sobel.icl"), str(target)],
                             cwd=scratch, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True)
        if run.returncode != 0 or run.stdout.strip() != "ok":
            problems.append(f"the installed wheel does not work on its own: {run.stderr.strip()[-400:]}")
        for p in problems:
            print(p, file=sys.stderr)
        print(f"{wheel.name}: {len(in_wheel)} files; {sdist.name}: {len(in_sdist)} files; "
              + ("OK" if not problems else f"{len(problems)} problems"))
        return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
