"""Careless input cannot destroy or falsify data: no output overwrites an input, no foreign file
is changed, nothing that was not measured is stored, no folder appears unasked, and damaged or
odd input gets a clear message (exit 1), never an internal error."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from imagecl.cli import main
from imagecl.outputs import OutputError, atomic_file, write_atomic
from imagecl.tuner.store import APPLICATION_ID, Record, RunKey, Store, StoreError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DOUBLE = """
#pragma imcl grid(input, output)
void double_it(Image<float> input, Image<float> output) {
    output[idx][idy] = 2.0f * input[idx][idy];
}
"""


def cli(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    assert "internal error" not in captured.err and "Traceback" not in captured.err, captured.err
    return code, captured.out, captured.err


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a folder: its bytes and modification time."""
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.fixture
def ours(tmp_path) -> Path:
    """A results database of ours with two measurements."""
    db = tmp_path / "m.db"
    run = RunKey("abc", "double_it", "dev", "drv", "16x16")
    with Store(db) as store:
        store.add(run, Record({"wg_x": 4, "wg_y": 2}, "ok", 2e-5, [2e-5]))
        store.add(run, Record({"wg_x": 8, "wg_y": 2}, "ok", 1e-5, [1e-5]))
    return db


@pytest.fixture
def foreign(tmp_path) -> Path:
    """Someone else's SQLite database, in rollback-journal mode."""
    folder = tmp_path / "theirs"
    folder.mkdir()
    db = folder / "app.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE users (name TEXT)")
    con.execute("INSERT INTO users VALUES ('ada')")
    con.commit()
    con.close()
    return db


# ---- outputs never overwrite inputs ---------------------------------------------------------------


def test_compile_refuses_to_overwrite_its_source(tmp_path, capsys):
    src = tmp_path / "a.icl"
    src.write_text(DOUBLE)
    (tmp_path / "link.icl").symlink_to(src)
    for target in (src, tmp_path / "." / "a.icl", tmp_path / "link.icl"):
        code, _, err = cli(capsys, "compile", src, "-o", target)
        assert code == 1 and "would overwrite the input" in err
    assert src.read_text() == DOUBLE


def test_compile_refuses_to_overwrite_its_config_file(tmp_path, capsys):
    src = tmp_path / "a.icl"
    src.write_text(DOUBLE)
    config = tmp_path / "c.json"
    config.write_text("{}")
    code, _, err = cli(capsys, "compile", src, "--config", f"@{config}", "-o", config)
    assert code == 1 and "would overwrite the input" in err and config.read_text() == "{}"


def test_export_refuses_to_overwrite_the_database(ours, capsys):
    before = snapshot(ours.parent)
    for target in (ours, Path(f"{ours}-wal")):
        code, _, err = cli(capsys, "export", "--db", ours, "--format", "t4", "-o", target)
        assert code == 1 and "would overwrite the input" in err
    assert snapshot(ours.parent) == before


def test_run_refuses_to_overwrite_an_input_image_or_write_two_outputs_to_one_file(tmp_path, capsys):
    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    image = tmp_path / "in.npy"
    np.save(image, np.ones((5, 7), np.float32))
    before = image.read_bytes()
    code, _, err = cli(capsys, "run", src, f"input={image}", "-o", f"output={image}", "--device", "cpu")
    assert code == 1 and "would overwrite the input" in err and image.read_bytes() == before
    sobel = EXAMPLES / "sobel.icl"
    code, _, err = cli(capsys, "run", sobel, f"input={image}", "-o", f"dx={tmp_path / 'o.npy'}",
                       "-o", f"dy={tmp_path / 'o.npy'}", "--device", "cpu")
    assert code == 1 and "same file" in err and not (tmp_path / "o.npy").exists()


def test_tune_checks_its_outputs_before_it_measures(tmp_path, capsys):
    """A --db that is one of the tuned files, or the source, is refused before the search."""
    src = tmp_path / "double_it.icl"
    src.write_text(DOUBLE)
    out = tmp_path / "out"
    code, _, err = cli(capsys, "tune", src, "--size", "16x16", "--budget", "2", "--db", out / "double_it.json",
                       "-o", out)
    assert code == 1 and "would overwrite the input" in err and not (out / "double_it.json").exists()
    code, _, err = cli(capsys, "tune", src, "--size", "16x16", "--budget", "2", "--db", src, "-o", out)
    assert code == 1 and "would overwrite the input" in err and src.read_text() == DOUBLE


def test_import_refuses_its_own_file_as_database(tmp_path, capsys):
    cache = tmp_path / "kt.json"
    cache.write_text(json.dumps(_kt_cache({"1": {"a": 1, "time": 1.0}})))
    before = cache.read_bytes()
    code, _, err = cli(capsys, "import", cache, "--db", cache)
    assert code == 1 and "would overwrite the input" in err and cache.read_bytes() == before


# ---- atomic writes and missing folders ------------------------------------------------------------


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "x.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_file(target) as f:
            f.write(b"half")
            raise RuntimeError("the writer failed")
    assert target.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    write_atomic(target, "new")
    assert target.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["x.txt"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()


def test_run_writes_images_in_place_atomically(tmp_path, capsys):
    """PNG (8-bit) and TIFF (float32) through the temporary file: the values NumPy expects."""
    from PIL import Image

    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    np.save(tmp_path / "in.npy", np.full((5, 7), 0.25, np.float32))
    for name in ("o.png", "o.tif"):
        (tmp_path / name).write_bytes(b"old")
        code, _, _ = cli(capsys, "run", src, f"input={tmp_path / 'in.npy'}", "-o", f"output={tmp_path / name}",
                         "--device", "cpu")
        assert code == 0
    assert np.array_equal(np.array(Image.open(tmp_path / "o.png")), np.full((5, 7), 128, np.uint8))
    assert np.array_equal(np.array(Image.open(tmp_path / "o.tif")), np.full((5, 7), 0.5, np.float32))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.icl", "in.npy", "o.png", "o.tif"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_missing_output_folders_are_refused_not_created(tmp_path, ours, capsys):
    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    missing = tmp_path / "no" / "such"
    np.save(tmp_path / "in.npy", np.ones((5, 7), np.float32))
    commands = [("compile", src, "-o", missing / "x.cl"),
                ("export", "--db", ours, "--format", "kernel_tuner", "-o", missing / "x.json"),
                ("run", src, f"input={tmp_path / 'in.npy'}", "-o", f"output={missing / 'o.npy'}", "--device",
                 "cpu"),
                ("measure", src, "--size", "8x8", "--random", "1", "--db", missing / "m.db")]
    for command in commands:
        code, _, err = cli(capsys, *command)
        assert code == 1 and "does not exist" in err, (command, err)
    assert not (tmp_path / "no").exists()


def test_tune_makes_its_output_folder_and_says_so(tmp_path, foreign, capsys):
    """tune -o DIR makes DIR and its missing parents (README's `-o out/sobel` on a fresh checkout)
    and names each folder it made; here the foreign --db then stops it before any measurement."""
    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    out = tmp_path / "new" / "out"
    code, _, err = cli(capsys, "tune", src, "--size", "8x8", "--budget", "1", "--db", foreign, "-o", out)
    assert code == 1 and f"created the folders {tmp_path / 'new'}, {out}" in err and out.is_dir()
    code, _, err = cli(capsys, "tune", src, "--size", "8x8", "--budget", "1", "--db", foreign, "-o", out)
    assert code == 1 and "created" not in err


def test_library_output_folder_makes_only_the_folder_itself(tmp_path):
    from imagecl.outputs import output_folder

    assert output_folder(tmp_path / "a").is_dir()
    with pytest.raises(OutputError, match="does not exist"):
        output_folder(tmp_path / "b" / "c")
    assert not (tmp_path / "b").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="not a folder"):
        output_folder(tmp_path / "file" / "c", created=[])


# ---- foreign and damaged databases ---------------------------------------------------------------


def test_a_foreign_database_is_never_changed(foreign, tmp_path, capsys):
    """results, export, measure and import refuse it; its bytes, its time and its journal mode stay,
    and no -wal or -shm file appears beside it."""
    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    cache = tmp_path / "kt.json"
    cache.write_text(json.dumps(_kt_cache({"1": {"a": 1, "time": 1.0}})))
    before = snapshot(foreign.parent)
    commands = [("results", "--db", foreign), ("results", "--db", foreign, "--json"),
                ("export", "--db", foreign, "--format", "t4", "-o", tmp_path / "x.json"),
                ("measure", src, "--size", "8x8", "--random", "1", "--db", foreign),
                ("import", cache, "--db", foreign)]
    for command in commands:
        code, _, err = cli(capsys, *command)
        assert code == 1 and "not a results database of imagecl" in err and "users" in err, (command, err)
    with pytest.raises(StoreError):
        Store(foreign)
    assert snapshot(foreign.parent) == before
    con = sqlite3.connect(f"{foreign.as_uri()}?mode=ro", uri=True)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    con.close()


def test_a_foreign_file_of_another_kind_is_never_changed(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    before = snapshot(tmp_path)
    for command in (("results", "--db", notes), ("export", "--db", notes, "--format", "t4", "-o",
                                                  tmp_path / "x.json")):
        code, _, err = cli(capsys, *command)
        assert code == 1 and "not an SQLite database" in err
    with pytest.raises(StoreError):
        Store(notes)
    assert snapshot(tmp_path) == before


def test_read_only_commands_do_not_create_a_database(tmp_path, capsys):
    code, _, err = cli(capsys, "results", "--db", tmp_path / "none.db")
    assert code == 1 and "no such results database" in err
    code, _, err = cli(capsys, "export", "--db", tmp_path / "none.db", "--format", "t4", "-o", tmp_path / "x")
    assert code == 1 and "no such results database" in err
    assert list(tmp_path.iterdir()) == []


def test_our_database_and_empty_files_are_accepted(ours, tmp_path, capsys):
    code, out, _ = cli(capsys, "results", "--db", ours)
    assert code == 0 and "2 records" in out
    con = sqlite3.connect(ours)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    con.close()
    empty = tmp_path / "empty.db"
    empty.touch()
    code, out, _ = cli(capsys, "results", "--db", empty)
    assert code == 0 and "no measurements" in out and empty.stat().st_size == 0  # read-only: still empty
    with Store(empty) as store:
        assert list(store.records()) == []


def test_an_older_store_without_application_id_is_still_ours(tmp_path):
    db = tmp_path / "old.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    con.execute("CREATE TABLE measurements (id INTEGER PRIMARY KEY, program_hash TEXT NOT NULL, program_name TEXT "
                "NOT NULL, device TEXT NOT NULL, driver TEXT NOT NULL, problem_size TEXT NOT NULL, config TEXT NOT "
                "NULL, config_key TEXT NOT NULL, source_hash TEXT, status TEXT NOT NULL, time REAL, times TEXT, "
                "spread REAL, error TEXT, verified INTEGER NOT NULL DEFAULT 0, timestamp REAL NOT NULL, UNIQUE "
                "(program_hash, device, driver, problem_size, config_key))")
    con.commit()
    con.close()
    with Store(db) as store:
        assert list(store.records()) == []


def test_a_store_of_a_newer_schema_is_refused_untouched(ours):
    con = sqlite3.connect(ours)
    con.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    con.commit()
    con.close()
    before = snapshot(ours.parent)
    with pytest.raises(StoreError, match="schema version 99"):
        Store(ours)
    assert snapshot(ours.parent) == before


def test_a_store_damaged_past_its_first_page_is_a_clear_error(tmp_path, capsys):
    """The header and the table list read well; the records' pages do not."""
    db = tmp_path / "big.db"
    run = RunKey("abc", "double_it", "dev", "drv", "16x16")
    with Store(db) as store:
        for i in range(3000):
            store.add(run, Record({"wg_x": i, "pad": 10 ** 9}, "ok", 1e-5, [1e-5] * 8))
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    data = bytearray(db.read_bytes())
    page = 4096
    for start in range(10 * page, len(data) - page, 3 * page):
        data[start:start + page] = bytes([0xA5]) * page
    db.write_bytes(bytes(data))
    for command in (("results", "--db", db), ("results", "--db", db, "--json")):
        code, _, err = cli(capsys, *command)
        assert code == 1 and "cannot read the results database" in err, err


@pytest.mark.parametrize("damage", ["truncated", "garbage", "bad_record"])
def test_damaged_databases_give_a_clear_error(ours, tmp_path, capsys, damage):
    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    if damage == "truncated":
        data = ours.read_bytes()
        ours.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        ours.write_bytes(b"SQLite format 3\x00" + bytes(range(256)) * 40)
    else:
        con = sqlite3.connect(ours)
        con.execute("UPDATE measurements SET config='{not json'")
        con.commit()
        con.close()
    before = ours.read_bytes()
    commands = [("results", "--db", ours), ("export", "--db", ours, "--format", "t4", "-o", tmp_path / "x.json")]
    if damage != "bad_record":  # a record tune never reads (another program's) does not stop it
        commands.append(("tune", src, "--size", "8x8", "--budget", "1", "--db", ours, "-o", tmp_path / "out"))
    for command in commands:
        code, _, err = cli(capsys, *command)
        assert code == 1 and str(ours) in err, (command, err)
        assert ours.read_bytes() == before
    assert not (tmp_path / "x.json").exists()


# ---- import stores what was measured, and says what it left out ----------------------------------


def _kt_cache(cache: dict, params: dict = None) -> dict:
    names = list(params) if params else ["a"]
    return {"schema_version": "1.1.0", "device_name": "gpu", "kernel_name": "k", "problem_size": [64, 64],
            "tune_params_keys": names, "tune_params": params or {"a": [1, 2]}, "objective": "time", "cache": cache}


def test_import_skips_values_outside_the_space_and_reports_them(tmp_path, capsys):
    """The issue's case: wg_x 2.5 became 2, T 0.5 became 1 (a hanging variant stored as 7.7 us)."""
    cache = _kt_cache({"1,1": {"wg_x": 1, "T": 1, "time": 0.5},
                       "2,1": {"wg_x": 2, "T": 1, "time": 0.4},
                       "2.5,1": {"wg_x": 2.5, "T": 1, "time": 0.1},
                       "4,0.5": {"wg_x": 4, "T": 0.5, "time": 0.0077},
                       "8,1": {"wg_x": 8, "T": 1, "time": 0.01},
                       "4,float": {"wg_x": 4, "T": "float", "time": 0.01},
                       "4,2": {"wg_x": 4, "T": 2, "time": "RuntimeFailedConfig"},
                       "2.0,1": {"wg_x": 2.0, "T": 1, "time": 0.3}},
                      {"wg_x": [1, 2, 4], "T": [1, 2]})
    path = tmp_path / "kt.json"
    path.write_text(json.dumps(cache))
    code, out, _ = cli(capsys, "import", path, "--db", tmp_path / "i.db")
    assert code == 0
    assert "stored 3 measurements" in out and "merged 1 repeated" in out and "skipped 4" in out
    assert "wg_x = 2.5, not an integer" in out and "T = 0.5, not an integer" in out
    assert 'T = "float", not an integer' in out and "wg_x = 8, which tune_params does not list" in out
    with Store(tmp_path / "i.db") as store:
        stored = {json.dumps(r.config, sort_keys=True): r.time for r in store.records()}
    assert stored == {'{"T": 1, "wg_x": 1}': 0.5e-3, '{"T": 1, "wg_x": 2}': pytest.approx(0.3e-3),
                      '{"T": 2, "wg_x": 4}': None}


def test_import_of_t4_reports_mismatched_configurations(tmp_path, capsys):
    results = [{"configuration": {"a": 1, "b": 2}, "invalidity": "correct",
                "measurements": [{"name": "time", "value": 1.0, "unit": "ms"}]},
               {"configuration": {"a": 1}, "invalidity": "correct",
                "measurements": [{"name": "time", "value": 1.0, "unit": "ms"}]},
               {"configuration": {"a": 1.5, "b": 2}, "invalidity": "correct",
                "measurements": [{"name": "time", "value": 1.0, "unit": "ms"}]}]
    path = tmp_path / "t4.json"
    path.write_text(json.dumps({"schema_version": "1.0.0", "results": results}))
    code, out, _ = cli(capsys, "import", path, "--db", tmp_path / "i.db")
    assert code == 0 and "stored 1 measurements" in out and "skipped 2" in out
    assert "1 result whose parameters differ" in out and "a = 1.5, not an integer" in out


def test_import_refuses_duplicate_keys_and_stores_nothing(tmp_path, capsys):
    path = tmp_path / "kt.json"
    text = json.dumps(_kt_cache({"1": {"a": 1, "time": 1.0}, "2": {"a": 2, "time": 2.0}}))
    path.write_text(text.replace('"2": {"a": 2', '"1": {"a": 2'))
    code, _, err = cli(capsys, "import", path, "--db", tmp_path / "i.db")
    assert code == 1 and "appears twice" in err and not (tmp_path / "i.db").exists()


def test_import_of_nothing_usable_is_an_error_and_creates_no_database(tmp_path, capsys):
    path = tmp_path / "kt.json"
    path.write_text(json.dumps(_kt_cache({"0.5": {"a": 0.5, "time": 1.0}})))
    code, _, err = cli(capsys, "import", path, "--db", tmp_path / "i.db")
    assert code == 1 and "nothing to import" in err and "a = 0.5" in err and not (tmp_path / "i.db").exists()


def test_deeply_nested_json_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = cli(capsys, "import", path, "--db", tmp_path / "i.db")
    assert code == 1 and "nested too deeply" in err


# ---- long paths ------------------------------------------------------------------------------------


def test_a_300_character_path_is_a_clear_error(tmp_path, capsys):
    long = tmp_path / ("a" * 300)
    src = tmp_path / "d.icl"
    src.write_text(DOUBLE)
    commands = [("check", f"{long}.icl"), ("results", "--db", f"{long}.db"),
                ("export", "--db", f"{long}.db", "--format", "t4", "-o", tmp_path / "x.json"),
                ("import", f"{long}.json", "--db", tmp_path / "i.db"),
                ("compile", src, "-o", f"{long}.cl"),
                ("measure", src, "--size", "8x8", "--random", "1", "--db", f"{long}.db"),
                ("tune", src, "--size", "8x8", "--budget", "1", "-o", long),
                ("run", src, f"input={long}.npy"),
                ("simulate", f"{long}.json", "--strategy", "random", "--max-evals", "2", "--repeats", "1")]
    for command in commands:
        code, _, err = cli(capsys, *command)
        assert code == 1 and "too long" in err, (command, err)


def test_outputs_module_refuses_a_folder_as_file(tmp_path):
    from imagecl.outputs import check_output

    with pytest.raises(OutputError, match="is a folder"):
        check_output(tmp_path)
