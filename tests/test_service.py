"""The tuning service (imagecl serve): its verbs, validation, tokens, refusals, and the clients
(imagecl.load(service=), imagecl tune --service)."""
from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest
from service_util import DEVICE, EXAMPLES, TOKEN, ThreadServer, auth, body, free_port, token_file

import imagecl
from imagecl.service import client as service_client
from imagecl.service.app import Settings
from imagecl.service.knowledge import Knowledge
from imagecl.tuner.knowledge import device_from_json
from imagecl.tuner.store import Store, canonical_config


def _settings(tmp_path: Path, **kw) -> Settings:
    return Settings(db=str(tmp_path / "service.db"), token_file=str(token_file(tmp_path)), **kw)


@pytest.fixture
def server(tmp_path):
    s = ThreadServer(_settings(tmp_path, cache_seconds=60.0, retrain_after=20))
    yield s
    s.stop()


def _space(size=(64, 48), program="box_blur.icl", device=None):
    prog = imagecl.load(EXAMPLES / program)
    return Knowledge.space(prog, device_from_json(device or DEVICE), tuple(size))


def _post(server, verb, data, token=False):
    reply = server.http.post(f"/{verb}", json=data, headers=auth() if token else {})
    return reply.status_code, reply.json()


def _snapshot(db: str) -> dict:
    con = sqlite3.connect(db)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
                for t in ("measurements", "refusals", "programs", "devices")}
    finally:
        con.close()


def test_measured_beats_predicted_and_the_model_learns_from_submits(server):
    space = _space()
    configs = [space.complete(c) for c in space.random(21, seed=1)]
    observations = [{**body(), "configuration": c, "seconds": 1e-3 * (1 + (c["wg_x"] * c["px_x"]) % 7)}
                    for c in configs[:20]]
    observations.append({**body(), "configuration": configs[20], "failure": "out_of_resources"})
    assert _post(server, "submit", {"observations": observations}, token=True) == (200, {"stored": 21})
    server.knowledge.wait_trained()
    assert server.knowledge.model_info["state"] == "ready", server.knowledge.model_info

    # a size nobody measured: the model's prediction, with its spread
    status, answer = _post(server, "request", body(size=(96, 64)))
    assert status == 200 and answer["source"] == "predicted", answer
    assert answer["seconds"] > 0 and answer["uncertainty"] >= 0
    other = _space((96, 64))
    assert other.complete(answer["configuration"]) == answer["configuration"]
    # a measurement of that exact case wins over the prediction at once (the cached answer is dropped)
    measured = next(other.complete(c) for c in other.random(50, seed=2)
                    if canonical_config(other.complete(c)) != canonical_config(answer["configuration"]))
    assert _post(server, "submit", {**body(size=(96, 64)), "configuration": measured, "seconds": 2e-6}, True)[0] == 200
    status, answer = _post(server, "request", body(size=(96, 64)))
    assert (answer["source"], answer["configuration"], answer["seconds"]) == ("measured", measured, 2e-6)
    # the measured size: the fastest measured configuration
    fastest = min(observations[:20], key=lambda o: o["seconds"])
    status, answer = _post(server, "request", body())
    assert answer["source"] == "measured" and answer["seconds"] == fastest["seconds"]
    # RequestTraining: a configuration nobody measured, the model's uncertainty with it
    status, answer = _post(server, "request-training", body())
    assert status == 200 and answer["source"] == "unmeasured"
    assert canonical_config(answer["configuration"]) not in {canonical_config(c) for c in configs}
    # the program is known by its key from now on
    key = answer["program_key"]
    status, by_key = _post(server, "request", {**body(), "program": {"key": key}})
    assert status == 200 and by_key["seconds"] == fastest["seconds"]


def test_refused_never_returned_even_measured_fastest_and_after_a_restart(tmp_path):
    settings = _settings(tmp_path, cache_seconds=60.0, train=False)
    server = ThreadServer(settings)
    try:
        default = _space().complete({})
        status, answer = _post(server, "request", body())
        assert (status, answer["source"], answer["configuration"]) == (200, "default", default)
        assert _post(server, "refuse", {**body(), "configuration": default}, token=True) == (200, {"refused": default})
        # measured fastest of all, and still never suggested
        assert _post(server, "submit", {**body(), "configuration": default, "seconds": 1e-9}, token=True)[0] == 200
        for verb in ("request", "request-training"):
            status, answer = _post(server, verb, body())
            assert status == 200 and answer["configuration"] != default, verb
        # the refusal holds at every size of that program and device
        assert _post(server, "request", body(size=(32, 32)))[1]["configuration"] != _space((32, 32)).complete({})
    finally:
        server.stop()
    server = ThreadServer(settings)  # a new server on the same store knows the refusal
    try:
        assert _post(server, "request", body())[1]["configuration"] != default
    finally:
        server.stop()


HOSTILE = [
    (b"{", 400, "not valid JSON"),
    (b"[]", 400, "expected a JSON object"),
    (b"\xff\xfe", 400, "not valid JSON"),
    (b"[" * 100000 + b"]" * 100000, 400, "not valid JSON"),
    (b'{"program": 1, "seconds": NaN}', 400, "NaN is not a JSON number"),
    (json.dumps({**body(), "configuration": {}, "seconds": 1e-3, "extra": 1}).encode(), 400, "unknown field 'extra'"),
    (json.dumps({**body(), "configuration": {}, "seconds": -1}).encode(), 400, "seconds"),
    (json.dumps({**body(), "configuration": {}, "seconds": 0}).encode(), 400, "seconds"),
    (json.dumps({**body(), "configuration": {}, "seconds": 1e300}).encode(), 400, "seconds"),
    (json.dumps({**body(), "configuration": {}, "seconds": True}).encode(), 400, "expected a number"),
    (json.dumps({**body(), "configuration": {}, "seconds": 1e-3, "failure": "crash"}).encode(), 400, "either"),
    (json.dumps({**body(), "configuration": {}, "failure": "ok'; DROP TABLE measurements;--"}).encode(), 400,
     "not one of"),
    (json.dumps({**body(), "configuration": {"wg_x": 3}, "seconds": 1e-3}).encode(), 422, "not in the program's space"),
    (json.dumps({**body(), "configuration": {"x'); DROP TABLE measurements;--": 1}, "seconds": 1e-3}).encode(), 422,
     "not in the program's space"),
    (json.dumps({**body(), "configuration": {"wg_x": "1"}, "seconds": 1e-3}).encode(), 400, "expected an integer"),
    (json.dumps({**body(size=(0, 5)), "configuration": {}, "seconds": 1e-3}).encode(), 400, "outside"),
    (json.dumps({**body(size=(65536, 65536)), "configuration": {}, "seconds": 1e-3}).encode(), 400, "points"),
    (json.dumps({**body(size=(5,)), "configuration": {}, "seconds": 1e-3}).encode(), 400, "size"),
    (json.dumps({**body(), "program": {"source": "void f(", "filename": "../../etc/x.icl"}, "configuration": {},
                 "seconds": 1e-3}).encode(), 422, "x.icl:1"),
    (json.dumps({**body(), "program": {"key": "'; DROP TABLE x"}, "configuration": {}, "seconds": 1e-3}).encode(),
     400, "hexadecimal"),
    (json.dumps({**body(), "program": {"key": "0123456789abcdef"}, "configuration": {}, "seconds": 1e-3}).encode(),
     404, "knows no program"),
    (json.dumps({**body(device={**DEVICE, "max_work_group_size": -1}), "configuration": {},
                 "seconds": 1e-3}).encode(), 400, "max_work_group_size"),
    (json.dumps({**body(device={**DEVICE, "name": "a\x00b"}), "configuration": {}, "seconds": 1e-3}).encode(), 400,
     "NUL"),
    (json.dumps({**body(), "configuration": {}, "seconds": 1e-3, "times": [1, "x"]}).encode(), 400, "times"),
    (json.dumps({"observations": []}).encode(), 400, "observations"),
    (json.dumps({**body(), "program": {"source": "x" * 300000}, "configuration": {}, "seconds": 1e-3}).encode(), 400,
     "longer than"),
    (b" " * (2 << 20), 413, "larger than"),
]


@pytest.mark.parametrize("raw,status,message", HOSTILE, ids=[f"hostile{i}" for i in range(len(HOSTILE))])
def test_malformed_or_hostile_input_is_a_4xx_that_changes_nothing(server, raw, status, message):
    db = server.knowledge.address
    before = _snapshot(db)
    for verb in ("submit", "refuse", "request"):
        reply = server.http.post(f"/{verb}", content=raw, headers={**auth(), "Content-Type": "application/json"})
        assert 400 <= reply.status_code < 500, (verb, reply.status_code, reply.text)
        assert isinstance(reply.json()["error"], str)
        if verb == "submit":
            assert reply.status_code == status and message in reply.json()["error"], reply.text
    assert _snapshot(db) == before


def _without_units() -> dict:
    return {k: v for k, v in DEVICE.items() if k != "compute_units"}


@pytest.mark.parametrize("device, message", [
    (_without_units(), "device: missing field 'compute_units' (the device's number of compute units"),
    ({**DEVICE, "compute_units": 0}, "device.compute_units: 0 is outside 1.."),
    ({**DEVICE, "compute_units": -16}, "device.compute_units: -16 is outside 1.."),
    ({**DEVICE, "compute_units": "16"}, "device.compute_units: expected an integer, got a string"),
    ({**DEVICE, "compute_units": 16.0}, "device.compute_units: expected an integer, got a number"),
    ({**DEVICE, "compute_units": None}, "device.compute_units: expected an integer, got null"),
])
def test_a_device_needs_its_positive_number_of_compute_units(server, device, message):
    """Without it the service could not tell a device from another of its name and driver but
    another size; an older client that does not send it is told to update, with a 400."""
    before = _snapshot(server.knowledge.address)
    for verb, data in (("request", body(device=device)), ("request-training", body(device=device)),
                       ("submit", {**body(device=device), "configuration": {}, "seconds": 1e-3}),
                       ("refuse", {**body(device=device), "configuration": {}})):
        status, reply = _post(server, verb, data, token=True)
        assert status == 400 and message in reply["error"], (verb, reply)
    assert "update imagecl on the client" in _post(server, "request", body(device=_without_units()))[1]["error"]
    assert _snapshot(server.knowledge.address) == before


def test_devices_of_one_name_and_driver_but_another_size_are_kept_apart(tmp_path):
    """PoCL names a 16- and a 32-core Xeon VM alike: what the service learned of one, measured
    or refused, it never tells the other."""
    server = ThreadServer(_settings(tmp_path, cache_seconds=60.0, train=False))
    small, large = {**DEVICE, "compute_units": 16}, {**DEVICE, "compute_units": 32}
    space = _space()
    default = space.complete({})
    fast = next(space.complete(c) for c in space.random(20, seed=4) if space.complete(c) != default)
    try:
        assert _post(server, "request", body(device=small))[1]["source"] == "default"  # cached for the small VM
        assert _post(server, "submit", {**body(device=large), "configuration": fast, "seconds": 1e-6}, True)[0] == 200
        assert _post(server, "refuse", {**body(device=small), "configuration": default}, True)[0] == 200
        on_large = _post(server, "request", body(device=large))[1]
        assert (on_large["source"], on_large["configuration"]) == ("measured", fast)
        assert _post(server, "request-training", body(device=large))[1]["configuration"] == default
        on_small = _post(server, "request", body(device=small))[1]
        assert on_small["source"] != "measured" and on_small["configuration"] not in (fast, default)
    finally:
        server.stop()
    with Store(str(tmp_path / "service.db"), readonly=True) as store:
        (record,) = store.records()
        assert (record.device, record.compute_units) == (DEVICE["name"], 32)
        assert set(store.devices()) == {(DEVICE["name"], DEVICE["driver"], 16), (DEVICE["name"], DEVICE["driver"], 32)}


def test_hostile_but_valid_names_are_stored_as_text(server, tmp_path):
    """User text reaches the store as values, never as SQL, and never as a path."""
    evil = "x'); DROP TABLE measurements; --"
    device = {**DEVICE, "name": evil, "driver": "\"; DELETE FROM refusals; --"}
    data = body(device=device)
    data["program"]["filename"] = str(tmp_path / "written-by-the-service.icl")
    assert _post(server, "submit", {**data, "configuration": {}, "seconds": 1e-3}, token=True)[0] == 200
    with Store(server.knowledge.address, readonly=True) as store:
        [record] = list(store.records())
        assert (record.device, record.driver) == (evil, device["driver"])
    assert not (tmp_path / "written-by-the-service.icl").exists()


def test_submit_and_refuse_need_a_token_request_does_not(server):
    db = server.knowledge.address
    data = {**body(), "configuration": {}, "seconds": 1e-3}
    before = _snapshot(db)
    for headers in ({}, {"Authorization": "Bearer wrong-token-0123456789"}, {"Authorization": f"Basic {TOKEN}"},
                    {"Authorization": "Bearer"}):
        for verb in ("submit", "refuse"):
            payload = data if verb == "submit" else {**body(), "configuration": {}}
            reply = server.http.post(f"/{verb}", json=payload, headers=headers)
            assert reply.status_code == 401 and "Bearer" in reply.json()["error"]
    assert _snapshot(db) == before
    assert server.http.post("/request", json=body()).status_code == 200
    assert server.http.post("/submit", json=data, headers=auth()).json() == {"stored": 1}


def test_hashed_tokens_are_accepted(tmp_path):
    import hashlib

    (tmp_path / "hashed").write_text("sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest() + "\n")
    server = ThreadServer(Settings(db=str(tmp_path / "s.db"), token_file=str(tmp_path / "hashed"), train=False))
    try:
        data = {**body(), "configuration": {}, "seconds": 1e-3}
        assert server.http.post("/submit", json=data, headers=auth()).status_code == 200
        assert server.http.post("/submit", json=data, headers={"Authorization": "Bearer nope"}).status_code == 401
    finally:
        server.stop()


@pytest.mark.parametrize("tokens,extra,message", [
    (None, [], "Submit and Refuse need tokens: give --token-file"),
    ("", [], "no tokens in the token file"),
    ("short\n", [], "tokens:1: a token needs at least 16 characters"),
    ("sha256:abc\n", [], "tokens:1: 'sha256:' must be followed by 64 hexadecimal digits"),
])
def test_serve_refuses_to_start_without_usable_tokens(tmp_path, capsys, tokens, extra, message):
    from imagecl.cli import main

    args = ["serve", "--db", str(tmp_path / "s.db"), "--port", str(free_port())]
    if tokens is not None:
        (tmp_path / "tokens").write_text(tokens)
        args += ["--token-file", str(tmp_path / "tokens")]
    assert main(args + extra) == 1
    err = capsys.readouterr().err
    assert message in err and "internal error" not in err
    assert not (tmp_path / "s.db").exists()


def test_an_unreadable_token_file_is_a_clear_error(tmp_path, capsys):
    from imagecl.cli import main

    assert main(["serve", "--db", str(tmp_path / "s.db"), "--token-file", str(tmp_path / "missing")]) == 1
    assert "cannot read the token file" in capsys.readouterr().err


# ---- the clients ----------------------------------------------------------------------------------

def _reference_box_blur(image: np.ndarray) -> np.ndarray:
    padded = np.pad(image.astype(np.int64), 2, mode="wrap")
    h, w = image.shape
    total = sum(padded[2 + j:2 + j + h, 2 + i:2 + i + w] for j in range(-2, 3) for i in range(-2, 3))
    return ((total + 12) // 25).astype(np.uint8)


@pytest.fixture
def fresh_client_state(monkeypatch, tmp_path):
    # an empty registry: a program tuned locally (by another test) never asks the service
    monkeypatch.setenv("IMAGECL_TUNED", str(tmp_path / "registry"))
    monkeypatch.setattr(service_client, "_warned", set())
    monkeypatch.setattr(service_client, "_down_until", {})
    monkeypatch.setattr(service_client, "_clients", {})
    monkeypatch.delenv(service_client.ENV, raising=False)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_an_unreachable_service_warns_once_and_the_program_runs(fresh_client_state, monkeypatch, how):
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    if how == "environment":
        monkeypatch.setenv(service_client.ENV, url)
        prog = imagecl.load(EXAMPLES / "box_blur.icl")
    else:
        prog = imagecl.load(EXAMPLES / "box_blur.icl", service=url)
    image = np.random.default_rng(0).integers(0, 256, (37, 29), dtype=np.uint8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = prog(input=image)["output"]
        monkeypatch.setattr(service_client, "_down_until", {})  # asked again, and fails again: still one warning
        second = prog(input=image)["output"]
    said = [str(w.message) for w in caught if "tuning service" in str(w.message)]
    assert len(said) == 1 and url in said[0] and "running the local configuration" in said[0], said
    np.testing.assert_array_equal(first, _reference_box_blur(image))
    np.testing.assert_array_equal(second, first)


def test_load_with_a_service_runs_the_configuration_it_returns(fresh_client_state, tmp_path, monkeypatch):
    from dataclasses import asdict

    from imagecl.features.device import device_features

    server = ThreadServer(_settings(tmp_path, train=False))
    try:
        device = imagecl.select_device(None)
        prog = imagecl.load(EXAMPLES / "box_blur.icl", service=server.url)
        image = np.random.default_rng(1).integers(0, 256, (40, 56), dtype=np.uint8)
        space = prog.space_for(device, image.shape)
        chosen = next(space.complete(c) for c in space.random(40, seed=3)
                      if space.complete(c) != space.complete({}) and c.get("wg_x", 1) > 1)
        features = asdict(device_features(device))
        observation = {"program": {"source": prog.info.unit.source, "filename": "box_blur.icl"}, "device": features,
                       "size": [56, 40], "configuration": chosen, "seconds": 1e-7}
        assert server.http.post("/submit", json=observation, headers=auth()).status_code == 200
        built = []
        real_build = imagecl.program.launcher.build
        monkeypatch.setattr(imagecl.program.launcher, "build", lambda d, source, **kw: built.append(source) or
                            real_build(d, source, **kw))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning: the service answered
            out = prog(input=image)["output"]
        from imagecl.codegen.variant import VariantPlan

        assert built == [prog.source_of(VariantPlan.from_config(prog.info, chosen))]
        assert built != [prog.source_of(VariantPlan.naive(prog.info))]
        np.testing.assert_array_equal(out, _reference_box_blur(image))
        naive = imagecl.load(EXAMPLES / "box_blur.icl")(input=image)["output"]
        np.testing.assert_array_equal(out, naive)
        # asked once per device and size: a second run asks nothing
        monkeypatch.setattr(service_client.ServiceClient, "post", lambda *a, **k: pytest.fail("asked again"))
        np.testing.assert_array_equal(prog(input=image)["output"], naive)
    finally:
        server.stop()


def test_tune_submits_what_it_measured(fresh_client_state, tmp_path, monkeypatch):
    import subprocess
    import sys

    server = ThreadServer(_settings(tmp_path, train=False))
    try:
        done = subprocess.run([sys.executable, "-m", "imagecl", "tune", str(EXAMPLES / "box_blur.icl"), "--size",
                               "24x16", "--budget", "4", "--confirm", "0", "--service", server.url,
                               "--db", str(tmp_path / "local.db"), "-o", str(tmp_path / "out")],
                              capture_output=True, text=True, timeout=300,
                              env={**__import__("os").environ, service_client.TOKEN_ENV: TOKEN})
        assert done.returncode == 0, done.stderr
        with Store(tmp_path / "local.db", readonly=True) as local:
            mine = {canonical_config(r.config): (r.status, r.time) for r in local.records()}
        with Store(server.knowledge.address, readonly=True) as served:
            theirs = {canonical_config(r.config): (r.status, r.time) for r in served.records()}
        assert mine and theirs == mine
        assert f"submitted {len(mine)} measurements to the tuning service" in done.stderr
    finally:
        server.stop()


def test_a_submit_is_acknowledged_only_after_its_commit(server):
    """The reply waits for the transaction: while the store's commit is held back, no Submit is
    answered; concurrent Submits then share one commit (group commit)."""
    import threading

    assert server.http.post("/request", json=body()).status_code == 200  # compiled and remembered before
    store = server.knowledge.store
    release = threading.Event()
    commits = []
    real = store._execute_many

    def held(query, rows):
        rows = list(rows)
        release.wait(30)
        commits.append(len(rows))
        return real(query, rows)

    store._execute_many = held
    space = _space()
    configs = [space.complete(c) for c in space.random(6, seed=4)]
    replies = []

    def send(config):
        import httpx

        replies.append(httpx.post(f"{server.url}/submit", json={**body(), "configuration": config, "seconds": 1e-3},
                                  headers=auth(), timeout=60).status_code)

    threads = [threading.Thread(target=send, args=(c,)) for c in configs]
    for t in threads:
        t.start()
    import time

    time.sleep(1.0)
    assert replies == [] and commits == []  # held: nothing acknowledged before the commit
    release.set()
    for t in threads:
        t.join(60)
    assert replies == [200] * 6
    assert sum(commits) == 6 and len(commits) < 6  # the ones that waited went together
    with Store(server.knowledge.address, readonly=True) as stored:
        assert len(list(stored.records())) == 6


def test_a_warm_request_is_answered_from_the_cache_without_validating_again(server, monkeypatch):
    """The hot path: the same body again is two dict lookups (no parsing, no validation, no store)."""
    from imagecl.service import protocol

    first = server.http.post("/request", json=body())
    assert first.status_code == 200
    raw = json.dumps(body()).encode()
    server.http.post("/request", content=raw)  # this exact body now maps to its cache key

    def refuse(*args, **kwargs):
        raise AssertionError("validated again on the hot path")

    monkeypatch.setattr(protocol, "case", refuse)
    monkeypatch.setattr(server.knowledge, "_facts", refuse)
    again = server.http.post("/request", content=raw)
    assert again.status_code == 200 and again.json() == first.json()


def test_open_verbs_write_nothing(server):
    """Request and RequestTraining need no token, so they never change the store."""
    before = _snapshot(server.knowledge.address)
    for verb in ("request", "request-training"):
        for size in ((64, 48), (32, 32)):
            assert server.http.post(f"/{verb}", json=body(size=size, device={**DEVICE, "name": "new"})
                                    ).status_code == 200
    assert _snapshot(server.knowledge.address) == before


def test_any_json_is_either_valid_or_a_protocol_error():
    """Whatever JSON a client sends, validation answers with a ProtocolError (a 4xx), never
    another exception (a 500)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from imagecl.service import protocol

    scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
    values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                          | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=20)
    base = {**body(), "configuration": {"wg_x": 2}, "seconds": 1e-3}
    fields = st.sampled_from(sorted(base) + ["observations", "failure", "times", "key"])

    @settings(max_examples=150, deadline=None)
    @given(st.dictionaries(fields, values, max_size=6), st.booleans(), values)
    def check(changes, merge, whole):
        for data in ({**base, **changes} if merge else changes, whole):
            for parse in (protocol.submit, protocol.case, protocol.refusal):
                try:
                    parse(data)
                except protocol.ProtocolError as exc:
                    assert 400 <= exc.status < 500 and str(exc)

    check()


def test_a_program_is_compiled_once_per_meaning(server, monkeypatch):
    """Another text of the same program (a comment added) is the program already compiled, and
    gets the same answers."""
    from imagecl.service import knowledge as service_knowledge

    first = server.http.post("/request", json=body()).json()
    monkeypatch.setattr(service_knowledge.Knowledge, "_compile",
                        staticmethod(lambda *a: pytest.fail("compiled again")))
    commented = body()
    commented["program"]["source"] = "// a comment\n" + commented["program"]["source"] + "\n\n"
    again = server.http.post("/request", json=commented).json()
    assert again == first


def test_an_answer_composed_while_a_submit_landed_is_not_cached(tmp_path):
    """A cold Request reads the store, then ranks and composes off the event loop; a Submit that
    commits in between makes what it read stale: that answer is returned, never cached."""
    import asyncio

    from imagecl.service import protocol

    knowledge = Knowledge(str(tmp_path / "s.db"), train=False)

    async def run():
        knowledge.start()
        case = protocol.case(body())
        real = knowledge._ranking

        def ranking_while_a_submit_lands(*args):
            knowledge.epoch += 1  # what a Submit or Refuse committing now does
            return real(*args)

        knowledge._ranking = ranking_while_a_submit_lands
        _, key = await knowledge.answer(case, "request")
        assert knowledge.cached(key, "request") is None
        knowledge._ranking = real
        _, key = await knowledge.answer(case, "request")
        assert knowledge.cached(key, "request") is not None

    try:
        asyncio.run(run())
    finally:
        knowledge.close()
