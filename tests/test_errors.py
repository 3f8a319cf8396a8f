"""Malformed programs: every kind of mistake gets `file:line:col: error: ...`, the source line,
a caret, and never a traceback or OpenCL code."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import imagecl

HEAD = "#pragma imcl grid(inp, out)\n"
SIG = "void f(Image<float> inp, Image<float> out) {\n"

# (id, source, expected line, message fragment[, expected column])
CASES = [
    # ---- lexical and syntax errors -------------------------------------------------------
    ("missing-semicolon", HEAD + SIG + "    float a = inp[idx][idy]\n    out[idx][idy] = a;\n}\n", 3,
     "expected ';'"),
    # as in C, the next line becomes the returned value
    ("missing-semicolon-return", HEAD + SIG + "    if (idx > 3) return\n    out[idx][idy] = 1.0f;\n}\n", 4,
     "the kernel cannot return a value"),
    ("unclosed-brace", HEAD + SIG + "    out[idx][idy] = inp[idx][idy];\n", 3, "expected '}' at end of file"),
    ("extra-brace", HEAD + SIG + "    out[idx][idy] = 1.0f;\n}\n}\n", 5, "unexpected '}'"),
    ("unbalanced-paren", HEAD + SIG + "    out[idx][idy] = (inp[idx][idy] * 2.0f;\n}\n", 3, "expected ')'"),
    ("unknown-type", HEAD + SIG + "    flaot a = 1.0f;\n    out[idx][idy] = a;\n}\n", 3, "unknown type name 'flaot'"),
    ("bad-character", HEAD + SIG + "    out[idx][idy] = inp[idx][idy] @ 2.0f;\n}\n", 3, "unexpected character '@'"),
    ("bad-number", HEAD + SIG + "    out[idx][idy] = 1.2.3;\n}\n", 3, "invalid number literal '1.2.3'"),
    ("bad-suffix", HEAD + SIG + "    out[idx][idy] = 12abc;\n}\n", 3, "invalid number literal"),
    ("hex-float-no-exponent", HEAD + SIG + "    out[idx][idy] = 0x1.8;\n}\n", 3,
     "hexadecimal floating constant '0x1.8' has no exponent", 21),
    ("unterminated-comment", HEAD + SIG + "    /* never closed\n    out[idx][idy] = 1.0f;\n}\n", 3,
     "unterminated comment"),
    ("string-literal", HEAD + SIG + '    out[idx][idy] = "one";\n}\n', 3, "string literals are not supported"),
    ("define", "#define R 2\n" + HEAD + SIG + "    out[idx][idy] = 1.0f;\n}\n", 1,
     "preprocessor directive '#define' is not supported"),
    ("else-without-if", HEAD + SIG + "    else out[idx][idy] = 1.0f;\n}\n", 3, "unexpected 'else'"),
    ("assign-in-declaration-list", HEAD + SIG + "    float = 3.0f;\n}\n", 3, "expected"),
    # ---- pragmas -----------------------------------------------------------------------------
    ("unknown-pragma", "#pragma imcl gird(inp)\n" + SIG + "    out[idx][idy] = 1.0f;\n}\n", 1,
     "unknown pragma 'imcl gird'; did you mean 'grid'?"),
    ("grid-unknown-image", "#pragma imcl grid(inptu)\n" + SIG + "    out[idx][idy] = inp[idx][idy];\n}\n", 1,
     "unknown image 'inptu'; did you mean 'inp'?"),
    ("grid-not-image", "#pragma imcl grid(k)\nvoid f(Image<float> out, float k) {\n    out[idx][idy] = k;\n}\n",
     1, "'k' is not an image"),
    ("boundary-mode", HEAD + "#pragma imcl boundary_cond(inp:clamp)\n" + SIG + "    out[idx][idy] = inp[idx][idy];\n}\n",
     2, "unknown boundary condition 'clamp'; did you mean 'clamped'?"),
    ("boundary-missing-mode", HEAD + "#pragma imcl boundary_cond(inp)\n" + SIG
     + "    out[idx][idy] = inp[idx][idy];\n}\n", 2, "needs 'image:mode'"),
    ("boundary-twice", HEAD + "#pragma imcl boundary_cond(inp:wrap, inp:mirror)\n" + SIG
     + "    out[idx][idy] = inp[idx][idy];\n}\n", 2, "given twice"),
    ("pragma-syntax", "#pragma imcl grid(inp, out\n" + SIG + "    out[idx][idy] = 1.0f;\n}\n", 1, "expected ')'"),
    ("no-grid", SIG + "    out[idx][idy] = 1.0f;\n}\n", 1, "has no iteration space"),
    ("grid-size-zero", "#pragma imcl grid_size(0, 4)\nvoid f(Image<float> out) {\n    out[idx][idy] = 1.0f;\n}\n",
     1, "grid size must be positive"),
    ("tunable-not-int", "#pragma imcl tunable(N: 1, two)\n" + HEAD + SIG + "    out[idx][idy] = N;\n}\n", 1,
     "values must be integers"),
    ("tunable-assigned", "#pragma imcl tunable(N: 1, 2)\n" + HEAD + SIG + "    N = 3;\n    out[idx][idy] = N;\n}\n",
     4, "cannot assign to tunable 'N'"),
    ("kernel-pragma-unknown", "#pragma imcl kernel(mian)\n" + HEAD + SIG + "    out[idx][idy] = 1.0f;\n}\n", 1,
     "names unknown function 'mian'"),
    ("local-mem-on-output", HEAD + "#pragma imcl local_mem(out)\n" + SIG + "    out[idx][idy] = inp[idx][idy];\n}\n",
     2, "is written by the kernel and cannot be placed in local memory"),
    # ---- names and scopes ---------------------------------------------------------------------
    ("undeclared", HEAD + SIG + "    out[idx][idy] = inpt[idx][idy];\n}\n", 3,
     "use of undeclared identifier 'inpt'; did you mean 'inp'?"),
    ("out-of-scope", HEAD + SIG + "    if (idx > 0) {\n        float t = 1.0f;\n    }\n    out[idx][idy] = t;\n}\n", 6,
     "undeclared identifier 't'"),
    ("redeclared", HEAD + SIG + "    float a = 1.0f;\n    int a = 2;\n    out[idx][idy] = a;\n}\n", 4,
     "redefinition of 'a'"),
    ("duplicate-param", "#pragma imcl grid(out)\nvoid f(Image<float> out, float k, int k) {\n    out[idx][idy] = k;\n}\n",
     2, "redefinition of parameter 'k'"),
    ("idz-in-2d", HEAD + SIG + "    out[idx][idy] = inp[idx][idy] + idz;\n}\n", 3, "'idz' is only defined for 3-D grids"),
    ("assign-grid-index", HEAD + SIG + "    idx = 0;\n    out[idx][idy] = 1.0f;\n}\n", 3,
     "cannot assign to the grid index 'idx'"),
    # C keywords and the language's type names are not names (OpenCL C words are: renamed)
    ("c-keyword", HEAD + SIG + "    float static = 1.0f;\n    out[idx][idy] = static;\n}\n", 3,
     "'static' is a C keyword and cannot be used as a name", 11),
    ("c-keyword-parameter", "#pragma imcl grid(out)\nvoid f(Image<float> out, int register) {\n"
     "    out[idx][idy] = register;\n}\n", 2, "'register' is a C keyword and cannot be used as a name", 30),
    ("type-name-as-name", HEAD + SIG + "    int uchar = 1;\n    out[idx][idy] = uchar;\n}\n", 3,
     "'uchar' is a type name and cannot be used as a name", 9),
    ("keyword-as-function-name", "float auto(float v) {\n    return v;\n}\n" + HEAD + SIG
     + "    out[idx][idy] = inp[idx][idy];\n}\n", 1, "'auto' is a C keyword and cannot be used as a name", 7),
    ("keyword-as-tunable", "#pragma imcl tunable(switch: 1, 2)\n" + HEAD + SIG + "    out[idx][idy] = 1.0f;\n}\n", 1,
     "'switch' is a C keyword and cannot be used as a name", 22),
    ("depth-of-2d-unsubscripted", "#pragma imcl grid(a, out)\nvoid f(Image<float> a, Image<float> out) {\n"
     "    out[idx][idy] = a.depth;\n}\n", 3, "'a.depth' is only defined for 3-D images", 23),
    ("depth-before-2d-use", "#pragma imcl grid(out)\nvoid f(Image<float> a, Image<float> out) {\n"
     "    float d = a.depth;\n    out[idx][idy] = a[idx][idy] + d;\n}\n", 3, "'a.depth' is only defined for 3-D images",
     17),
    # ---- types ------------------------------------------------------------------------------------
    ("float-modulo", HEAD + SIG + "    out[idx][idy] = inp[idx][idy] % 2.0f;\n}\n", 3, "invalid operands to binary '%'"),
    ("float-shift", HEAD + SIG + "    out[idx][idy] = inp[idx][idy] << 1;\n}\n", 3, "invalid operands to binary '<<'"),
    ("float-bitnot", HEAD + SIG + "    out[idx][idy] = ~inp[idx][idy];\n}\n", 3, "invalid operand to '~'"),
    ("float-index", HEAD + SIG + "    float x = 1.5f;\n    out[idx][idy] = inp[x][idy];\n}\n", 4,
     "array subscript is not an integer"),
    ("vector-to-scalar", HEAD + SIG + "    float4 v = (float4)(1.0f, 2.0f, 3.0f, 4.0f);\n    float s = v;\n"
     "    out[idx][idy] = s;\n}\n", 4, "cannot initialise 'float' variable 's' with a value of type 'float4'"),
    ("bad-component", HEAD + SIG + "    float2 v = (float2)(1.0f, 2.0f);\n    out[idx][idy] = v.z;\n}\n", 4,
     "invalid component '.z' of 'float2'"),
    ("member-of-scalar", HEAD + SIG + "    float s = 1.0f;\n    out[idx][idy] = s.x;\n}\n", 4, "which is not a vector"),
    ("width-of-scalar", HEAD + SIG + "    float s = 1.0f;\n    out[idx][idy] = s.width;\n}\n", 4,
     "'.width' is only defined for images"),
    ("vector-literal-size", HEAD + SIG + "    float4 v = (float4)(1.0f, 2.0f, 3.0f);\n    out[idx][idy] = v.x;\n}\n", 3,
     "needs 4 components, got 3"),
    ("void-variable", HEAD + SIG + "    void v;\n    out[idx][idy] = 1.0f;\n}\n", 3, "declared void"),
    ("const-uninitialised", HEAD + SIG + "    const int r;\n    out[idx][idy] = r;\n}\n", 3, "must be initialised"),
    ("assign-const", HEAD + SIG + "    const int r = 2;\n    r = 3;\n    out[idx][idy] = r;\n}\n", 4,
     "cannot assign to const variable 'r'"),
    ("not-lvalue", HEAD + SIG + "    (idx + 1) = 2;\n    out[idx][idy] = 1.0f;\n}\n", 3, "not assignable"),
    ("unsupported-pixel", "#pragma imcl grid(out)\nvoid f(Image<float2> out) {\n    out[idx][idy] = 1.0f;\n}\n", 2,
     "unsupported pixel type 'float2'"),
    ("half-type", HEAD + SIG + "    half h = 1.0f;\n    out[idx][idy] = h;\n}\n", 3, "type 'half' is not supported"),
    # ---- images and arrays -------------------------------------------------------------------
    ("image-as-value", HEAD + SIG + "    out[idx][idy] = inp;\n}\n", 3, "image 'inp' must be subscripted"),
    ("image-dims-inconsistent", HEAD + SIG + "    float a = inp[idx][idy];\n    float b = inp[idx][idy][0];\n"
     "    out[idx][idy] = a + b;\n}\n", 4, "used with 3 subscripts here and 2 elsewhere"),
    ("image-one-subscript", HEAD + SIG + "    out[idx][idy] = inp[idx];\n}\n", 3, "needs 2 or 3 subscripts"),
    ("grid-dims-mismatch", "#pragma imcl grid(a, out)\nvoid f(Image<float> a, Image<float> out) {\n"
     "    out[idx][idy] = a[idx][idy][0];\n}\n", 3, "grid image 'a' has 3 dimensions but the grid has 2"),
    ("array-too-many-subscripts", "#pragma imcl grid(out)\nvoid f(Image<float> out, float k[3]) {\n"
     "    out[idx][idy] = k[0][1];\n}\n", 3, "array 'k' has 1 dimension, got 2 subscripts"),
    ("array-constant-out-of-bounds", "#pragma imcl grid(out)\nvoid f(Image<float> out, float k[3]) {\n"
     "    out[idx][idy] = k[3];\n}\n", 3, "index 3 is out of bounds for 'k' (size 3)"),
    ("array-param-written", "#pragma imcl grid(out)\nvoid f(Image<float> out, float k[3]) {\n    k[0] = 1.0f;\n"
     "    out[idx][idy] = k[0];\n}\n", 3, "array parameters are read-only"),
    ("private-array-size", HEAD + SIG + "    int n = 3;\n    float w[n];\n    out[idx][idy] = 1.0f;\n}\n", 4,
     "array size must be an integer constant"),
    ("too-many-initialisers", HEAD + SIG + "    float w[2] = {1.0f, 2.0f, 3.0f};\n    out[idx][idy] = w[0];\n}\n", 3,
     "too many initialisers"),
    ("image-width-typo", HEAD + SIG + "    out[idx][idy] = inp.widht;\n}\n", 3,
     "image 'inp' has no member 'widht'; did you mean 'width'?"),
    ("depth-of-2d", HEAD + SIG + "    out[idx][idy] = inp[idx][idy] + inp.depth;\n}\n", 3, "only defined for 3-D images"),
    # ---- data races -------------------------------------------------------------------------------
    ("race-constant-write", HEAD + SIG + "    out[0][idy] = inp[idx][idy];\n}\n", 3, "data race"),
    ("race-row-write", HEAD + SIG + "    out[idx][0] = inp[idx][idy];\n}\n", 3, "does not depend on idy"),
    ("race-read-neighbour", "#pragma imcl grid(img)\nvoid f(Image<float> img) {\n"
     "    img[idx][idy] = img[idx + 1][idy] * 0.5f;\n}\n", 3, "data race"),
    # ---- functions and control flow ------------------------------------------------------------------
    ("unknown-function", HEAD + SIG + "    out[idx][idy] = sqrtt(inp[idx][idy]);\n}\n", 3,
     "call to undeclared function 'sqrtt'; did you mean 'sqrt'?"),
    ("builtin-arity", HEAD + SIG + "    out[idx][idy] = pow(inp[idx][idy]);\n}\n", 3, "takes 2 arguments, 1 given"),
    ("helper-arity", "float twice(float x) {\n    return 2.0f * x;\n}\n" + HEAD + SIG
     + "    out[idx][idy] = twice(inp[idx][idy], 1.0f);\n}\n", 6, "takes 1 argument, 2 given"),
    ("helper-missing-return", "float twice(float x) {\n    float y = 2.0f * x;\n}\n" + HEAD + SIG
     + "    out[idx][idy] = twice(inp[idx][idy]);\n}\n", 3, "control reaches the end of non-void function"),
    ("recursion", "int fact(int n) {\n    return n <= 1 ? 1 : n * fact(n - 1);\n}\n" + HEAD + SIG
     + "    out[idx][idy] = fact(4);\n}\n", 2, "recursion is not supported"),
    ("helper-uses-idx", "float at() {\n    return (float)idx;\n}\n" + HEAD + SIG + "    out[idx][idy] = at();\n}\n",
     2, "'idx' is only defined in the kernel function"),
    ("helper-image-param", "float first(Image<float> a) {\n    return 0.0f;\n}\n" + HEAD + SIG
     + "    out[idx][idy] = 1.0f;\n}\n", 1, "cannot take image or pointer parameter"),
    ("kernel-returns-value", HEAD + SIG + "    out[idx][idy] = 1.0f;\n    return 1;\n}\n", 4, "cannot return a value"),
    ("kernel-not-void", HEAD + "float f(Image<float> inp, Image<float> out) {\n    return 1.0f;\n}\n", 2,
     "must return void"),
    ("break-outside-loop", HEAD + SIG + "    break;\n}\n", 3, "'break' statement not in a loop"),
    ("continue-outside-loop", HEAD + SIG + "    if (idx > 2) continue;\n    out[idx][idy] = 1.0f;\n}\n", 3,
     "'continue' statement not in a loop"),
    ("vector-condition", HEAD + SIG + "    float2 v = (float2)(1.0f, 0.0f);\n    if (v) out[idx][idy] = 1.0f;\n}\n", 4,
     "condition must be a scalar"),
    ("declaration-as-if-body", HEAD + SIG + "    if (idx > 0) float t = 1.0f;\n    out[idx][idy] = 1.0f;\n}\n", 3,
     "declaration is not allowed here"),
    ("function-redefined", "float g(float x) {\n    return x;\n}\nfloat g(float y) {\n    return y;\n}\n" + HEAD + SIG
     + "    out[idx][idy] = g(1.0f);\n}\n", 4, "redefinition of function 'g'"),
    ("call-before-definition", "float g(float x) {\n    return h(x);\n}\nfloat h(float y) {\n    return y;\n}\n"
     + HEAD + SIG + "    out[idx][idy] = g(1.0f);\n}\n", 2, "called before it is defined"),
    ("vector-cast", HEAD + SIG + "    int4 a = (int4)(1, 2, 3, 4);\n    float4 b = (float4)a;\n    out[idx][idy] = b.x;\n}\n", 4,
     "cannot cast 'int4' to 'float4'"),
    ("vector-mix", HEAD + SIG + "    float2 a = (float2)(1.0f, 2.0f);\n    float4 b = (float4)(1.0f, 2.0f, 3.0f, 4.0f);\n"
     "    float4 c = a + b;\n    out[idx][idy] = c.x;\n}\n", 5, "invalid operands to binary '+'"),
]


def _check(case):
    name, source = case[:2]
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.compile(source, filename=f"{name}.icl")
    err = info.value
    return err


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_program_reports_line_and_message(case):
    name, source, line, fragment = case[:4]
    err = _check(case)
    assert err.line == line, f"reported line {err.line}, expected {line}:\n{err}"
    if len(case) > 4:
        assert err.column == case[4], f"reported column {err.column}, expected {case[4]}:\n{err}"
    assert fragment in err.message, f"message {err.message!r} lacks {fragment!r}"
    text = str(err)
    # file:line:col: error: message, then the source line and a caret under the column
    assert text.startswith(f"{name}.icl:{line}:{err.column}: error: ")
    lines = text.splitlines()
    source_line = source.splitlines()[line - 1]
    assert lines[1].strip() == source_line.strip()
    caret = lines[2]
    assert caret.strip() == "^" and caret.index("^") - 4 == err.column - 1
    assert err.column >= 1


def test_there_are_at_least_forty_kinds_of_mistake():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


def test_every_case_is_otherwise_valid_shape():
    """Each case above differs from a valid program by its mistake: the base program compiles."""
    base = HEAD + SIG + "    out[idx][idy] = inp[idx][idy];\n}\n"
    imagecl.compile(base).opencl_source()


def test_error_carries_position_attributes():
    with pytest.raises(imagecl.CompileError) as info:
        imagecl.compile(HEAD + SIG + "    out[idx][idy] = inpt[idx][idy];\n}\n", filename="p.icl")
    assert (info.value.line, info.value.column) == (3, 21)
    assert info.value.hint is None or isinstance(info.value.hint, str)
    assert isinstance(info.value, imagecl.ImageCLError)


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "imagecl", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in (
    "missing-semicolon", "unknown-pragma", "race-read-neighbour", "unterminated-comment", "recursion")],
    ids=lambda c: c[0])
def test_cli_reports_errors_without_traceback(tmp_path, case):
    name, source, line, fragment = case[:4]
    path = tmp_path / f"{name}.icl"
    path.write_text(source)
    for command in ("check", "compile"):
        result = _cli(command, str(path))
        assert result.returncode == 1
        assert "Traceback" not in result.stderr
        assert f"{path}:{line}:" in result.stderr and fragment in result.stderr
        assert result.stdout == ""  # no OpenCL code for an invalid program


def test_cli_usage_errors_exit_1_without_traceback(tmp_path):
    good = tmp_path / "ok.icl"
    good.write_text(textwrap.dedent("""\
        #pragma imcl grid(inp, out)
        void f(Image<float> inp, Image<float> out, float k) {
            out[idx][idy] = k * inp[idx][idy];
        }
        """))
    for args in (
        ("nonsense",),
        ("check", str(tmp_path / "missing.icl")),
        ("run", str(good), "inp=" + str(tmp_path / "missing.png")),
        ("run", str(good), "k=abc"),
        ("run", str(good), "kk=1"),
        ("run", str(good), "notanassignment"),
        ("compile", str(good), "--config", "{bad json"),
        ("compile", str(good), "--config", '{"nope": 1}'),
        ("run", str(good), "--device", "no-such-device-xyz", "k=1"),
    ):
        result = _cli(*args)
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        assert result.stderr.strip(), args
