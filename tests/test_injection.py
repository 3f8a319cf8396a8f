"""User text (paths, names, device names, configurations) that reaches generated OpenCL, C, JSON,
SQL or a file name stays text: every place is tried with text built to escape its context."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import imagecl
import jinja2
from imagecl import escape, templating
from imagecl.cli import main
from imagecl.export import c_wrapper, describe_variant, export_tuned
from imagecl.tuner.kernel import KernelError, KernelTuneResult, Output, TunableKernel
from imagecl.tuner.store import Record, RunKey, Store

ROOT = Path(__file__).resolve().parent.parent

DOUBLE = """
#pragma imcl grid(input, output)
void double_it(Image<float> input, Image<float> output) {
    output[idx][idy] = 2.0f * input[idx][idy];
}
"""

# text built to leave a comment: a line break of every kind, a comment's end, a trigraph that
# splices lines (??/ is a backslash in C99), a final backslash, invisible bidi controls, NUL
HOSTILE = [
    "proj\n#define get_global_id(d) 0\n#define T ",
    "proj\r#define get_global_id(d) 0\r#define T ",
    "proj\u2028#define get_global_id(d) 0\u2029#define T ",
    "proj\x85#define get_global_id(d) 0\x0b#define T \x0c",
    "lib*/ int imcl_injected_marker = 1; /*",
    "lib*/\n#define get_global_id(d) 0\n/*",
    "x/*/ int imcl_injected_marker = 1; /*/",
    "trailing??/",
    "odd???/",
    "trailing\\",
    "nul\x00byte\x1b[31m\u202eevil\udcff",
]


def _marker_free_c(text: str) -> None:
    """The escaped text has nothing that can end or continue a comment."""
    for bad in ("\n", "\r", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x00", "*/", "/*", "??"):
        assert bad not in text
    assert not text.endswith("\\")


@pytest.mark.parametrize("text", HOSTILE)
def test_comment_escaper_leaves_nothing_that_ends_a_comment(text):
    escaped = escape.comment(text)
    _marker_free_c(escaped)
    assert escaped.isprintable()


def test_comment_escaper_keeps_plain_text_and_shows_what_it_replaced():
    assert escape.comment("/home/me/filters/sobel.icl") == "/home/me/filters/sobel.icl"
    assert escape.comment("caf\u00e9 \u00fc") == "caf\u00e9 \u00fc"
    assert escape.comment("a\nb") == "a\\nb"
    assert escape.comment("lib*/x") == "lib*\\/x"
    assert escape.comment("x\u2028") == "x\\u2028"


def _placed_expressions(template: str) -> list[tuple[str, str]]:
    """(place, expression) for every `{{ ... }}` of a template of C or OpenCL: the place is
    "comment" inside a comment (`//` to the end of the line, `/*` to `*/` across lines), "string"
    inside a string literal, else "code"."""
    text = re.sub(r"\{#.*?#\}", "", template, flags=re.S)
    found, state, i = [], "code", 0
    while i < len(text):
        if text.startswith("{{", i):
            end = text.index("}}", i)
            found.append(("comment" if state in ("line", "block") else state, text[i + 2:end].strip()))
            i = end + 2
            continue
        if text.startswith("{%", i):
            i = text.index("%}", i) + 2
            continue
        pair = text[i:i + 2]
        if state == "code" and pair in ("//", "/*"):
            state, i = ("line" if pair == "//" else "block"), i + 2
            continue
        if state == "block" and pair == "*/":
            state, i = "code", i + 2
            continue
        if state == "code" and text[i] == '"':
            state = "string"
        elif state == "line" and text[i] == "\n":
            state = "code"
        elif state == "string" and text[i] == "\\":
            i += 1
        elif state == "string" and text[i] == '"':
            state = "code"
        i += 1
    return found


# the least number of comment and string-literal fields each template has: a template added to
# templates/ without an entry here fails, so that its fields are checked too
TEMPLATE_FIELDS = {"kernel.cl.j2": (8, 0), "kernel_body.cl.j2": (4, 0), "host_wrapper.h.j2": (4, 0),
                   "host_wrapper.c.j2": (3, 2), "host_wrapper_run.j2": (0, 0)}


def test_the_template_scanner_finds_comments_and_strings():
    placed = _placed_expressions('a {{ x }} /* {{ y }}\n {{ z }} */ "{{ s }}\\\\" {{ w }} // {{ v }}\n{{ u }}')
    assert placed == [("code", "x"), ("comment", "y"), ("comment", "z"), ("string", "s"), ("code", "w"),
                      ("comment", "v"), ("code", "u")]


@pytest.mark.parametrize("template", sorted(p.name for p in (ROOT / "templates").glob("*.j2")))
def test_every_value_a_template_writes_into_a_comment_or_string_is_escaped(template):
    """By construction: a new field put into a comment of a template without `| comment`, or into
    a C string literal without `| c_identifier` (a name checked to need no escape), fails here."""
    assert template in TEMPLATE_FIELDS, f"templates/{template} is new: add it to TEMPLATE_FIELDS"
    placed = _placed_expressions((ROOT / "templates" / template).read_text())
    for place, expression in placed:
        if place == "comment":
            assert expression.endswith("| comment"), f"unescaped in a comment of {template}: {expression}"
        if place == "string":
            assert expression.endswith("| c_identifier"), f"unchecked in a string of {template}: {expression}"
    least_comments, least_strings = TEMPLATE_FIELDS[template]
    assert sum(place == "comment" for place, _ in placed) >= least_comments
    assert sum(place == "string" for place, _ in placed) >= least_strings


def _filters_used(template: str) -> set[str]:
    tags = re.findall(r"\{[{%](.*?)[%}]\}", re.sub(r"\{#.*?#\}", "", template, flags=re.S), flags=re.S)
    return {name for tag in tags for name in re.findall(r"\|\s*([A-Za-z_]\w*)", tag)}


def test_every_template_renders_with_every_escaping_filter():
    """The kernel, its body and the host wrapper are rendered by environments of one making
    (imagecl/templating.py) that all hold escape.py's filters, and have every filter any template
    uses: a template moved from one renderer to another keeps its escaping."""
    used = set().union(*(_filters_used(p.read_text()) for p in (ROOT / "templates").glob("*.j2")))
    assert {"comment", "c_string", "c_identifier"} <= used
    for env in (templating.environment(), templating.line_environment()):
        assert env.filters["comment"] is escape.comment
        assert env.filters["c_string"] is escape.c_string
        assert env.filters["c_identifier"] is escape.c_identifier
        assert used <= set(env.filters), used - set(env.filters)
        assert env.autoescape is False and env.undefined is jinja2.StrictUndefined


@pytest.mark.parametrize("filename", HOSTILE)
def test_hostile_program_path_cannot_change_the_kernel(filename):
    """The issue's attack: a path whose newline makes `#define get_global_id(d) 0` live wrote one
    pixel. Built on PoCL, every pixel is twice its input, as NumPy says."""
    program = imagecl.compile(DOUBLE, filename)
    source = program.opencl_source()
    assert not any(line.lstrip().startswith("#define") for line in source.splitlines())
    img = np.random.default_rng(1).random((23, 37), dtype=np.float32) + 0.5
    out = program(input=img, device="cpu")["output"]
    np.testing.assert_allclose(out, 2.0 * img, rtol=1e-6)


def test_hostile_path_on_disk_through_the_cli(tmp_path, capsys):
    folder = tmp_path / "proj\n#define get_global_id(d) 0\n#define T "
    folder.mkdir()
    (folder / "double.icl").write_text(DOUBLE)
    np.save(tmp_path / "in.npy", np.full((9, 11), 1.5, np.float32))
    assert main(["run", str(folder / "double.icl"), f"input={tmp_path / 'in.npy'}",
                 "-o", f"output={tmp_path / 'out.npy'}", "--device", "cpu"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.full((9, 11), 3.0, np.float32))
    assert main(["compile", str(folder / "double.icl"), "-o", str(tmp_path / "double.cl")]) == 0
    first = (tmp_path / "double.cl").read_text().splitlines()[0]
    assert first.startswith("// Generated by imagecl") and "\\n#define get_global_id(d) 0\\n" in first


def test_hostile_configuration_lines_stay_in_their_comment():
    program = imagecl.compile(DOUBLE, "double.icl")
    plan = program.plan({}, "cpu")
    source = program.source_of(plan, ["configuration: */\n#define get_global_id(d) 0\n/*"])
    assert not any(line.lstrip().startswith("#define") for line in source.splitlines())


def _gcc():
    if shutil.which("gcc") is None:
        pytest.fail("gcc is missing: scripts/setup.sh installs it")
    return "gcc"


@pytest.mark.parametrize("filename", HOSTILE)
def test_hostile_path_and_device_name_in_the_c_wrapper_stay_comments(tmp_path, monkeypatch, filename):
    """The exported wrapper compiles with -Wall -Werror (a '/*' or a splice inside a comment warns)
    and defines no symbol but the wrapper's own: the injected initialiser is inert."""
    monkeypatch.setattr("imagecl.export.select_name", lambda device: "GPU */ int imcl_injected_device = 1; /*")
    program = imagecl.compile(DOUBLE, filename)
    paths = export_tuned(program, {}, tmp_path / "out", "cpu")
    impl = tmp_path / "out" / "imcl_double_it.c"
    assert impl in paths
    obj = tmp_path / "w.o"
    built = subprocess.run([_gcc(), "-std=c99", "-Wall", "-Werror", "-c", str(impl), "-o", str(obj)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    symbols = subprocess.run(["nm", str(obj)], capture_output=True, text=True, check=True).stdout
    defined = {line.split()[-1] for line in symbols.splitlines() if len(line.split()) == 3}
    assert defined == {"imcl_double_it_init", "imcl_double_it_run", "imcl_double_it_release",
                       "imcl_double_it_source"}, defined
    description = json.loads((tmp_path / "out" / "double_it.json").read_text())
    assert description["program"] == filename  # JSON keeps the text exactly, escaped by json


def test_c_string_literal_reproduces_any_text(tmp_path):
    """gcc reads escape.c_string back to the same bytes, whatever they are."""
    text = "quote \" backslash \\ end\\\n??/ ??= trigraphs ??? */ /* tab\t caf\u00e9 \x01\x7f 0123 \\x41"
    program = tmp_path / "p.c"
    program.write_text('#include <stdio.h>\nint main(void) { fputs(' + escape.c_string(text) + ', stdout); '
                       'return 0; }\n')
    built = subprocess.run([_gcc(), "-std=c99", "-Wall", "-Werror", "-o", str(tmp_path / "p"), str(program)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(tmp_path / "p")], capture_output=True, check=True)
    assert ran.stdout == text.encode("utf-8")


def test_c_identifiers_and_file_names_are_checked():
    assert escape.c_identifier("gemm_2") == "gemm_2"
    for bad in ("../x", "a b", "1x", "caf\u00e9", "", "x;y", "x\n"):
        with pytest.raises(escape.UnsafeNameError):
            escape.c_identifier(bad)
    assert escape.file_component("gemm.cl") == "gemm.cl"
    for bad in ("..", ".", "a/b", "a\\b", "a\x00b", "x" * 256, ""):
        with pytest.raises(escape.UnsafeNameError):
            escape.file_component(bad)


def test_hand_written_kernel_names_must_be_identifiers(tmp_path):
    """A kernel's name becomes the saved files' names and a parameter's a #define: neither may
    be anything but a C identifier."""
    source = "__kernel void k(__global float* a) { a[get_global_id(0)] = 1.0f; }"
    for name in ("../../escaped", "k\n#define X", "k*/"):
        with pytest.raises(KernelError, match="C identifier"):
            TunableKernel(source, name, global_size=(16,))
    kernel = TunableKernel(source, "k", global_size=(16,))
    with pytest.raises(KernelError, match="C identifier"):
        kernel.add_parameter("T\u00e9", [1, 2])
    result = KernelTuneResult("k", {}, 1e-3, source, [], (16,), None, 1, "exhaustive", "dev")
    result.kernel_name = "../escaped"  # as if made by hand
    with pytest.raises(escape.UnsafeNameError):
        result.save(tmp_path / "out")
    assert not (tmp_path / "escaped.cl").exists()


def test_reference_kernel_defines_cannot_add_build_options():
    source = "__kernel void k(__global float* a) { a[get_global_id(0)] = 1.0f; }"
    kernel = TunableKernel(source, "k", global_size=(16,))
    kernel.set_arguments([Output(np.zeros(16, np.float32))])
    with pytest.raises(KernelError, match="C identifier"):
        kernel.set_reference_kernel(source, "k", (16,), defines={"X=1 -DEVIL": 2})


def test_sql_text_is_data(tmp_path):
    """Names with quotes and SQL go in through parameters and come back unchanged."""
    name = "x'); DROP TABLE measurements; --"
    run = RunKey("h", name, "dev\" OR 1=1 --", "drv", "8x8")
    with Store(tmp_path / "s.db") as store:
        store.add(run, Record({"a'--": 1}, "ok", 1e-3, [1e-3]))
        got = list(store.records(run))
    assert [(r.program_name, r.device, r.config) for r in got] == [(name, run.device, {"a'--": 1})]


def test_description_json_round_trips_hostile_text():
    program = imagecl.compile(DOUBLE, "a\"b\\c\n\u2028\udcff.icl")
    data = json.loads(json.dumps(describe_variant(program, {}, "cpu")))
    assert data["program"] == program.filename
    header, impl = c_wrapper(program, {}, "cpu")
    assert "\n#define" not in header.split("#ifndef")[0]


def test_names_from_imported_files_stay_one_line_on_the_terminal(tmp_path, capsys):
    """A kernel name from someone's cache file cannot move the cursor, colour or add lines."""
    name = "k\x1b[2J\x1b[31m\nfake line\u202e"
    cache = {"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "kernel_name": name, "device_name": "d\r",
             "cache": {"1": {"a": 1, "time": 1.0}}}
    path = tmp_path / "kt.json"
    path.write_text(json.dumps(cache))
    assert main(["import", str(path), "--db", str(tmp_path / "i.db")]) == 0
    assert main(["results", "--db", str(tmp_path / "i.db")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out and "\nfake line" not in out
    assert "k\\x1b[2J" in out
    with Store(tmp_path / "i.db") as store:
        assert [r.program_name for r in store.records()] == [name]  # stored as it was
