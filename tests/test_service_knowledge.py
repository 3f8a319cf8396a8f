"""The service's model is the live tuner's: `imagecl serve` and `imagecl tune --knowledge` train the
same ranker (target, launch features) on the same table, so that a case nobody measured gets the
same prediction from both."""
from __future__ import annotations

import math

import pytest
from service_util import DEVICE, EXAMPLES, ThreadServer, auth, body, token_file

import imagecl
from imagecl.service.app import Settings
from imagecl.service.knowledge import Knowledge, train_from_store
from imagecl.tuner.knowledge import PairRanker, assemble, device_from_json, predict
from imagecl.tuner.knowledge.fewshot import trained_model
from imagecl.tuner.knowledge.sources import gather
from imagecl.tuner.store import Store, canonical_config, text_hash

PROGRAM = "box_blur.icl"
MEASURED = ((64, 48), (128, 96))
UNMEASURED = (96, 64)


def _seconds(config: dict) -> float:
    """Made-up timings where the launch matters: a mid-sized work-group and coarsening win."""
    area = max(int(config.get("wg_x", 1)), 1) * max(int(config.get("wg_y", 1)), 1)
    px = max(int(config.get("px_x", 1)), 1) * max(int(config.get("px_y", 1)), 1)
    return 1e-3 * (1.0 + abs(math.log2(area) - 4) + 0.5 * abs(math.log2(px) - 2))


def _submit_cases(server) -> None:
    for size in MEASURED:
        space = Knowledge.space(imagecl.load(EXAMPLES / PROGRAM), device_from_json(DEVICE), size)
        observations = [{**body(PROGRAM, size=size), "configuration": space.complete(c),
                         "seconds": _seconds(space.complete(c))} for c in space.random(60, seed=size[0])]
        reply = server.http.post("/submit", json={"observations": observations}, headers=auth())
        assert reply.status_code == 200, reply.text


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    settings = Settings(db=str(folder / "service.db"), token_file=str(token_file(folder)), cache_seconds=60.0,
                        retrain_after=10_000, train=False)
    server = ThreadServer(settings)
    try:
        _submit_cases(server)
        assert server.knowledge.retrain()
        server.knowledge.wait_trained(120)
        assert server.knowledge.model_info["state"] == "ready", server.knowledge.model_info
        reply = server.http.post("/request", json=body(PROGRAM, size=UNMEASURED))
        assert reply.status_code == 200, reply.text
        rankings = [r for k, r in server.knowledge.rankings.items() if k[-1] == "x".join(map(str, UNMEASURED))]
        yield folder, server.knowledge.model, reply.json(), rankings
    finally:
        server.stop()


def _local(folder, model=None):
    """What `imagecl tune --knowledge` predicts from the same store (its model, or `model`)."""
    program = imagecl.load(EXAMPLES / PROGRAM)
    device = device_from_json(DEVICE)
    with Store(str(folder / "service.db")) as store:
        knowledge = gather([], local=store, programs={text_hash((EXAMPLES / PROGRAM).read_text()): program},
                           devices={device.name: device})
    if model is None:
        model = trained_model(knowledge, cache_dir=folder / "cache").model
    return model, knowledge, predict(model, program, device, UNMEASURED, top=64)


def test_service_and_local_tuner_predict_the_same(served):
    folder, service_model, answer, rankings = served
    assert device_from_json(DEVICE).type == "CPU"  # launch features are used on CPUs only: this case has them
    local_model, _, local = _local(folder)
    assert (service_model.kind, service_model.target, service_model.launch) == \
        (local_model.kind, local_model.target, local_model.launch) == ("forest", "scaled", True)
    # the served answer is the local tuner's first seed, with its predicted time and a spread
    assert answer["source"] == "predicted", answer
    assert canonical_config(answer["configuration"]) == canonical_config(local[0].config)
    assert answer["seconds"] == pytest.approx(local[0].seconds, rel=1e-9)
    assert answer["uncertainty"] is not None and answer["uncertainty"] > 0
    # and the whole ranking the service keeps for the case
    (ranking,) = rankings
    assert [canonical_config(c) for c in ranking.configs] == [canonical_config(p.config) for p in local]
    assert all(s is not None and s >= 0 for s in ranking.uncertainty)


def test_the_old_service_model_would_rank_otherwise(served):
    """The service's former model (median target, no launch features) ranks this case differently:
    the agreement above is the shared recipe's, not any forest's."""
    folder, _, answer, _ = served
    _, knowledge, local = _local(folder)
    data, _ = assemble(knowledge.usable(), knowledge.programs, knowledge.devices)
    _, _, old = _local(folder, PairRanker("forest").fit(data, range(len(data.cases))))
    assert [canonical_config(p.config) for p in old] != [canonical_config(p.config) for p in local]
    assert old[0].seconds != pytest.approx(answer["seconds"], rel=1e-6)


def test_train_from_store_is_the_local_model(served):
    folder, _, _, _ = served
    model, info = train_from_store(str(folder / "service.db"))
    local_model, _, local = _local(folder)
    assert info["cases"] == len(MEASURED) and info["used"] == info["records"] == 120
    _, _, again = _local(folder, model)
    assert [(canonical_config(p.config), p.seconds) for p in again] == \
        [(canonical_config(p.config), pytest.approx(p.seconds, rel=1e-9)) for p in local]
