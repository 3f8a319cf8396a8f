"""The checker accepts only programs that build, and reports located errors (never internal
errors) for literals, encodings and nesting it cannot take (issue 16, parts 3 and 4; issue 19)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import ndimage

import imagecl
from imagecl.frontend.depth import MAX_DEPTH, MAX_NESTING
from imagecl.parameters import generated_parameter
from imagecl.runtime import launcher
from imagecl.runtime.devices import select_device

HEAD = "#pragma imcl grid(input, output)\n"
SIG = "void f(Image<float> input, Image<float> output) {\n"


def _error(source: str, filename: str = "t.icl") -> imagecl.CompileError:
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.compile(source, filename)
    return info.value


def _builds(source: str, others: int = 2) -> imagecl.Program:
    """The program is accepted, and its naive variant and `others` random variants build."""
    prog = imagecl.compile(source, "t.icl")
    device = select_device(None)
    configs = [None] + (prog.space_for(device, (32, 32)).random(others, seed=3) if others else [])
    for config in configs:
        launcher.build(device, prog.opencl_source(config, device))
    return prog


# ---- item 3: names that OpenCL compilers predefine, or that the generated code uses -----------

PREDEFINED = ["cl_khr_fp64", "cl_amd_fp64", "CL_VERSION_1_2", "POCL_DEVICE_ADDRESS_BITS", "__OPENCL_VERSION__",
              "__ENDIAN_LITTLE__", "FP_FAST_FMA", "CLANG_MAJOR_X", "defined", "main"]


@pytest.mark.parametrize("name", PREDEFINED)
def test_predefined_macro_names_are_usable_as_variables(name):
    src = HEAD + SIG + f"    float {name} = 2.0f;\n    output[idx][idy] = input[idx][idy] * {name};\n}}\n"
    prog = _builds(src)
    img = np.random.default_rng(0).random((8, 12), dtype=np.float32)
    np.testing.assert_allclose(prog(input=img)["output"], 2 * img, rtol=1e-6)


def test_kernel_named_main_builds_and_runs():
    src = HEAD + "void main(Image<float> input, Image<float> output) {\n    output[idx][idy] = input[idx][idy] + 1.0f;\n}\n"
    prog = _builds(src)
    assert prog.kernel_symbol != "main"
    img = np.random.default_rng(1).random((5, 7), dtype=np.float32)
    np.testing.assert_allclose(prog(input=img)["output"], img + 1, rtol=1e-6)


@pytest.mark.parametrize("name", ["defined", "cl_khr_fp64", "POCL_DEVICE_ADDRESS_BITS"])
def test_tunables_named_like_predefined_macros_build(name):
    src = HEAD + f"#pragma imcl tunable({name}: 2, 3)\n" + SIG + f"    output[idx][idy] = input[idx][idy] * {name};\n}}\n"
    prog = _builds(src)
    img = np.ones((4, 4), np.float32)
    assert prog(input=img, config={name: 3})["output"][0, 0] == 3


@pytest.mark.parametrize("name,line,col,fragment", [
    ("idx", 4, 24, "called object 'idx' is not a function"),
    ("idy", 4, 24, "called object 'idy' is not a function"),
    ("input", 4, 24, "called object 'input' is not a function"),
])
def test_helper_named_like_grid_index_or_kernel_parameter(name, line, col, fragment):
    src = HEAD + f"float {name}(float v) {{ return v; }}\n" + SIG + f"    output[idx][idy] = {name}(1.0f);\n}}\n"
    err = _error(src)
    assert (err.line, err.column) == (line, col)
    assert fragment in err.message


def test_call_hidden_by_a_local_variable():
    src = HEAD + "float g(float v) { return v; }\n" + SIG + "    float g = 1.0f;\n    output[idx][idy] = g(g);\n}\n"
    err = _error(src)
    assert (err.line, err.column, err.message) == (5, 24, "called object 'g' is not a function")


@pytest.mark.parametrize("pragma,line,col,fragment", [
    ("image_mem(output)", 1, 24, "'output' is written by the kernel and cannot be placed in image memory"),
    ("constant_mem(input)", 1, 27, "image 'input' cannot be placed in constant memory"),
])
def test_placements_that_do_not_build(pragma, line, col, fragment):
    src = f"#pragma imcl {pragma}\n#pragma imcl boundary_cond(input:clamped)\n" + HEAD + SIG + \
        "    output[idx][idy] = input[idx + 1][idy];\n}\n"
    err = _error(src)
    assert (err.line, err.column) == (line, col)
    assert fragment in err.message


@pytest.mark.parametrize("name", ["interior", "vector_x", "wg_x", "px_y", "interleaved", "image_input",
                                  "local_input", "constant_k", "unroll_f_l3"])
def test_tunable_named_like_a_generated_parameter(name):
    src = f"#pragma imcl tunable({name}: 0, 1)\n" + HEAD + SIG + "    output[idx][idy] = input[idx][idy];\n}\n"
    err = _error(src)
    assert (err.line, err.column) == (1, 22)
    assert err.message == f"tunable '{name}' has the name of a built-in tuning parameter"


def test_sobel_with_a_tunable_named_interior_is_rejected():
    """Issue 19: this gave sobel two parameters named `interior`."""
    from pathlib import Path

    sobel = (Path(__file__).resolve().parent.parent / "examples" / "sobel.icl").read_text()
    err = _error("#pragma imcl tunable(interior: 0, 1)\n" + sobel)
    assert (err.line, err.column) == (1, 22) and "built-in tuning parameter" in err.message


def test_every_generated_parameter_of_the_examples_is_reserved():
    """The reserved families are those build_space mints (it asserts so itself): over every
    example, each parameter that is not the program's own tunable is in a family."""
    from pathlib import Path

    from imagecl.space import DeviceLimits

    kinds = set()
    for path in sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.icl")):
        prog = imagecl.load(path)
        for p in prog.space_for_limits(DeviceLimits()).parameters:
            assert generated_parameter(p.name) == (p.kind != "tunable"), (path.name, p.name)
            kinds.add(p.kind)
    # the examples exercise every family of parameter
    assert {"work_group", "coarsening", "layout", "image_mem", "local_mem", "constant_mem", "unroll",
            "fast_path", "tunable"} <= kinds


def test_tunable_named_like_a_function():
    src = "#pragma imcl tunable(g: 1, 2)\n" + HEAD + "float g(float v) { return v; }\n" + SIG + \
        "    output[idx][idy] = input[idx][idy];\n}\n"
    err = _error(src)
    assert (err.line, err.column, err.message) == (1, 22, "tunable 'g' has the name of a function")


@pytest.mark.parametrize("values", ["1, 99999999999999999999999", "1, 2147483648", "-2147483649, 1", "1, " + "9" * 5000])
def test_tunable_values_beyond_int(values):
    src = f"#pragma imcl tunable(N: {values})\n" + HEAD + SIG + "    output[idx][idy] = input[idx][idy] * N;\n}\n"
    err = _error(src)
    assert (err.line, err.column) == (1, 22)
    assert "does not fit in an int" in err.message


def test_tunable_values_are_read_as_c_reads_them():
    src = "#pragma imcl tunable(N: 010, 0x10, 2147483647, -2147483648)\n" + HEAD + SIG + \
        "    output[idx][idy] = input[idx][idy] * N;\n}\n"
    assert imagecl.compile(src).info.tunables["N"] == [8, 16, 2147483647, -2147483648]


def test_assigning_a_kernel_scalar_parameter():
    src = HEAD + "void f(Image<float> input, Image<float> output, float s) {\n    s += 1.0f;\n" \
        "    output[idx][idy] = input[idx][idy] * s;\n}\n"
    err = _error(src)
    assert (err.line, err.column, err.message) == (3, 5, "cannot assign to kernel parameter 's'")


def test_helper_parameters_stay_assignable():
    src = HEAD + "float g(float v) { v = v * 2.0f; return v; }\n" + SIG + "    output[idx][idy] = g(input[idx][idy]);\n}\n"
    prog = _builds(src)
    img = np.full((3, 3), 1.5, np.float32)
    np.testing.assert_allclose(prog(input=img)["output"], 3.0)


def test_body_declaration_redefining_a_parameter():
    src = HEAD + "void f(Image<float> input, Image<float> output, float s) {\n    float s = 0.0f;\n" \
        "    output[idx][idy] = input[idx][idy] + s;\n}\n"
    err = _error(src)
    assert (err.line, err.column, err.message) == (3, 11, "redefinition of 's'")


def test_inner_block_may_still_shadow_a_parameter():
    src = HEAD + "void f(Image<float> input, Image<float> output, float s) {\n    { float s = 2.0f; output[idx][idy] = s; }\n}\n"
    prog = _builds(src)
    assert prog(input=np.zeros((2, 2), np.float32), s=5.0)["output"][0, 0] == 2.0


# ---- item 4: literals, encodings ------------------------------------------------------------------

LITERAL_CASES = [
    ("09", "invalid digit '9' in octal constant '09'"),
    ("0778", "invalid digit '8' in octal constant"),
    ("0x1p99999", "floating constant '0x1p99999' is too large for float"),
    ("1e39f", "floating constant '1e39f' is too large for float"),
    ("1" * 5000, "integer literal '111111111111111111111111...' is too large for 32 bits"),
    ("1" * 5000 + ".0f", "is too large for float"),
    ("4294967296", "integer literal '4294967296' is too large for 32 bits"),
    ("0x100000000", "is too large for 32 bits"),
]


@pytest.mark.parametrize("literal,fragment", LITERAL_CASES, ids=[c[0][:12] for c in LITERAL_CASES])
def test_bad_literals_are_located(literal, fragment):
    src = HEAD + SIG + f"    output[idx][idy] = input[idx][idy] * {literal};\n}}\n"
    err = _error(src)
    assert (err.line, err.column) == (3, 42)
    assert fragment in err.message


def test_literals_at_the_limits_are_accepted():
    src = HEAD + SIG + "    float a = 3.4028234e38f; uint b = 4294967295u; int c = 0x7fffffff; float d = 0x1p-99999;\n" \
        "    output[idx][idy] = input[idx][idy] + (a > 0.0f ? 1.0f : 0.0f) + (float)(b & 1u) + (float)(c & 1) + d;\n}\n"
    prog = _builds(src)
    assert prog(input=np.zeros((2, 2), np.float32))["output"][0, 0] == 3.0


def test_non_utf8_bytes_are_located(tmp_path):
    path = tmp_path / "bad.icl"
    path.write_bytes((HEAD + SIG).encode() + b"    output[idx][idy] = input[idx][idy]; // caf\xe9 \xff\n}\n")
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.load(path)
    err = info.value
    assert (err.line, err.column) == (3, 47)
    assert "invalid UTF-8 byte 0xe9" in err.message
    cli = subprocess.run([sys.executable, "-m", "imagecl", "check", str(path)], capture_output=True, text=True)
    assert cli.returncode == 1
    assert f"{path}:3:47: error: invalid UTF-8 byte 0xe9" in cli.stderr
    assert "Traceback" not in cli.stderr


def test_utf8_with_a_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "bom.icl"
    path.write_bytes(b"\xef\xbb\xbf" + (HEAD + SIG + "    output[idx][idy] = input[idx][idy]; // caf\xc3\xa9\n}\n").encode("latin-1"))
    assert imagecl.load(path).name == "f"


# ---- item 4: nesting and recursion -----------------------------------------------------------------


def _nested(kind: str, depth: int) -> str:
    value = "input[idx][idy]"
    if kind == "blocks":
        return HEAD + SIG + "    " + "{" * depth + f"output[idx][idy] = {value};" + "}" * depth + "\n}\n"
    if kind == "loops":
        loops = "".join(f"for (int q{k} = 0; q{k} < 1; q{k}++) " for k in range(depth))
        return HEAD + SIG + f"    {loops}output[idx][idy] = {value};\n}}\n"
    if kind == "calls":
        return HEAD + SIG + "    output[idx][idy] = " + "fabs(" * depth + value + ")" * depth + ";\n}\n"
    if kind == "parens":  # each level needs its parentheses: a * (b + (a * (b + ...)))
        return HEAD + SIG + "    output[idx][idy] = " + "2.0f * (1.0f + " * depth + value + ")" * depth + ";\n}\n"
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["blocks", "loops", "calls", "parens"])
def test_nesting_at_the_limit_builds_and_beyond_it_is_located(kind):
    _builds(_nested(kind, MAX_NESTING - 4))
    err = _error(_nested(kind, 488 if kind == "blocks" else 244))
    assert err.line == 3 and err.column > 1
    assert "nested too deeply: more than 64 levels" in err.message


def test_issue_cases_of_deep_nesting_are_located_errors():
    """331 terms compile; 244 nested calls and 488 nested blocks are located errors."""
    imagecl.compile(HEAD + SIG + "    output[idx][idy] = " + " + ".join(["input[idx][idy]"] * 331) + ";\n}\n")
    # the body's block is the first level: the 64th call or block is the 65th
    assert _error(_nested("calls", 244)).column == 24 + 5 * (MAX_NESTING - 1)
    assert _error(_nested("blocks", 488)).column == 5 + (MAX_NESTING - 1)


def test_chain_beyond_the_tree_depth_limit_is_located():
    src = HEAD + SIG + "    output[idx][idy] = " + " + ".join(["1.0f"] * (MAX_DEPTH + 10)) + ";\n}\n"
    err = _error(src)
    assert err.line == 3 and "nested too deeply: more than 2000 levels" in err.message


def test_written_out_19x19_filter_matches_scipy():
    """A real filter written out term by term: 361 products in one sum."""
    rng = np.random.default_rng(5)
    weights = rng.standard_normal((19, 19)).astype(np.float32)
    terms = [f"{float(weights[j + 9, i + 9])!r}f * input[idx + {i}][idy + {j}]"
             for j in range(-9, 10) for i in range(-9, 10)]
    src = HEAD + "#pragma imcl boundary_cond(input:clamped)\n" + SIG + \
        "    output[idx][idy] = " + "\n        + ".join(terms) + ";\n}\n"
    prog = _builds(src, others=0)
    img = rng.random((40, 33), dtype=np.float32)
    got = prog(input=img)["output"]
    want = ndimage.correlate(img.astype(np.float64), weights.astype(np.float64), mode="nearest")
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_deep_program_in_a_thread():
    """Worker threads (the tuner's) compile deep programs too."""
    import threading

    src = HEAD + SIG + "    output[idx][idy] = " + " + ".join(["input[idx][idy]"] * 1500) + ";\n}\n"
    result = {}
    thread = threading.Thread(target=lambda: result.setdefault("src", imagecl.compile(src).opencl_source()))
    thread.start()
    thread.join()
    assert result["src"].count("input[") >= 1500


def test_cli_reports_nesting_without_traceback(tmp_path):
    path = tmp_path / "deep.icl"
    path.write_text(_nested("calls", 244))
    cli = subprocess.run([sys.executable, "-m", "imagecl", "compile", str(path)], capture_output=True, text=True)
    assert cli.returncode == 1, cli.stderr
    assert f"{path}:3:" in cli.stderr and "Traceback" not in cli.stderr


@pytest.mark.parametrize("body,col", [
    ("    float t = --output[idx][idy];\n    output[idx][idy] = t;\n", 17),
    ("    float t = 0.0f;\n    t = (output[idx][idy] = 1.0f) + 1.0f;\n", 10),
    ("    for (int i = 0; i < 2; output[idx][idy] += 1.0f) i++;\n", 28),
    ("    for (output[idx][idy] = 0.0f; idx < 0;) {}\n", 10),
])
def test_image_updates_inside_expressions_are_located(body, col):
    """The fuzzer found these accepted by the checker and rejected by the code generator."""
    err = _error(HEAD + SIG + body + "}\n")
    assert err.column == col and err.line == 3 + ("t = (" in body)
    assert err.message == "an image or pointer element can only be updated in a statement of its own"


def test_image_update_as_a_statement_is_accepted():
    prog = _builds(HEAD + SIG + "    output[idx][idy] = input[idx][idy];\n    output[idx][idy] += 1.0f;\n"
                   "    output[idx][idy]++;\n}\n")
    np.testing.assert_allclose(prog(input=np.ones((3, 3), np.float32))["output"], 3.0)


def test_long_else_if_chain_builds():
    """`else if` chains stay flat in the generated code, so they are not nesting."""
    chain = " else ".join(f"if (v < {k}.5f) v = {k}.0f;" for k in range(120))
    prog = _builds(HEAD + SIG + f"    float v = input[idx][idy];\n    {chain}\n    output[idx][idy] = v;\n}}\n", others=0)
    img = np.array([[0.2, 7.7, 200.0]], np.float32)
    np.testing.assert_allclose(prog(input=img)["output"], [[0.0, 8.0, 200.0]])


# ---- found by the fuzzer (scripts/fuzz.py, 3000 cases) ------------------------------------------


def test_variable_used_in_its_own_initializer():
    """In C, `float y = a[y]` reads the new float (the outer int is hidden from the declarator
    on): the checker had resolved it to the outer variable, and an interior variant did not build."""
    src = HEAD + SIG + "    for (int y = 0; y < 2; y++) {\n        float y = input[idx + y][idy];\n" \
        "        output[idx][idy] = y;\n    }\n}\n"
    err = _error(src)
    assert (err.line, err.column, err.message) == (4, 31, "variable 'y' is used in its own initializer")


def test_idz_before_the_grid_is_known_in_a_2d_grid():
    src = "#pragma imcl grid(output)\nvoid f(Image<int> output) {\n    int z = idz;\n    output[idx][idy] = z;\n}\n"
    err = _error(src)
    assert (err.line, err.column, err.message) == (3, 13, "'idz' is only defined for 3-D grids; this grid is 2-D")


def test_tunable_named_like_the_array_image_reads_coordinates():
    """A tunable `i` or `j` became `#define i 3`, rewriting the generated read function of an
    array in image memory (its parameters are `int j, int i`)."""
    for name in ("i", "j"):
        src = f"#pragma imcl tunable({name}: 1, 3)\n#pragma imcl image_mem(k)\n" + HEAD + \
            "void f(Image<float> input, Image<float> output, float k[2][3]) {\n" \
            f"    output[idx][idy] = input[idx][idy] * k[1][2] + (float){name};\n}}\n"
        prog = _builds(src, others=0)
        k = np.arange(6, dtype=np.float32).reshape(2, 3)
        out = prog(input=np.ones((2, 2), np.float32), k=k, config={name: 3})["output"]
        np.testing.assert_allclose(out, 5.0 + 3.0)


def test_loop_over_two_billion_offsets_gets_a_space_quickly():
    """bilateral.icl with its main loop over k = -2147483648 .. 2 (a fuzzed case): the register
    tile's size was computed by listing the footprint's 2^31 rows, which ran the process out of
    memory while building the space."""
    import time
    from pathlib import Path

    src = (Path(__file__).resolve().parent.parent / "examples" / "bilateral.icl").read_text()
    at = src.rindex("int k = -2;")
    src = src[:at] + "int k = -2147483648;" + src[at + len("int k = -2;"):]
    write = "output[idx][idy][idz] = convert_uchar_sat(sum / wsum + 0.5f);"
    src = src.replace(write, "{{" + write + "}}")  # as fuzzed: only then does the space size a register tile
    start = time.perf_counter()
    prog = _builds(src, others=1)
    assert time.perf_counter() - start < 20
    assert prog.space_for(select_device(None), (8, 8, 8)).size > 1
