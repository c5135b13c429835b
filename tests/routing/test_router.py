"""The router's choice: cached prefix against load, session affinity as a tiebreak,
where the session went before for workers without events; the baselines."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tokenyard.kv_blocks import block_hashes
from tokenyard.routing.kv_index import KvIndex
from tokenyard.routing.router import Candidate, Router, WorkerLoad

PROMPT = list(range(100, 164))  # 4 blocks of 16


def candidates(*names, loads=None, block_size=16):
    loads = loads or {}
    return [Candidate(n, loads.get(n, WorkerLoad()), block_size) for n in names]


def test_the_worker_holding_the_longest_prefix_wins():
    index = KvIndex()
    index.stored("a", block_hashes(PROMPT, 16)[:1])
    index.stored("b", block_hashes(PROMPT, 16)[:3])
    decision = Router(index).choose(candidates("a", "b", "c"), PROMPT)
    assert decision.worker == "b" and decision.reason == "kv-overlap" and decision.overlap_tokens == 48


def test_load_outweighs_a_small_overlap():
    index = KvIndex()
    index.stored("b", block_hashes(PROMPT, 16)[:1])
    busy = {"b": WorkerLoad(requests=3, tokens=5000)}
    assert Router(index).choose(candidates("a", "b", loads=busy), PROMPT).worker == "a"


def test_session_affinity_breaks_ties_and_stands_in_for_workers_without_events():
    router = Router(KvIndex())
    router.routed("s1", "b", PROMPT)
    # Nothing cached anywhere (events on): a tie, broken by where the session went.
    assert router.choose(candidates("a", "b"), PROMPT + [1], "s1").worker == "b"
    # No events (block size unknown): the session's previous prompt there is the estimate.
    decision = router.choose(candidates("a", "b", block_size=None), PROMPT + [1], "s1")
    assert decision.worker == "b" and decision.overlap_tokens == len(PROMPT) and decision.reason == "session-affinity"
    assert router.choose(candidates("a", "b", block_size=None), PROMPT, "other").worker == "a"


def test_osl_counts_in_the_load_a_request_adds():
    router = Router(KvIndex(), default_osl=100)
    assert router.choose(candidates("a"), PROMPT).load_tokens == len(PROMPT) + 100
    assert router.choose(candidates("a"), PROMPT, osl=7).load_tokens == len(PROMPT) + 7


def test_baselines():
    index = KvIndex()
    index.stored("b", block_hashes(PROMPT, 16))
    round_robin = Router(index, policy="round-robin")
    assert [round_robin.choose(candidates("a", "b", "c"), PROMPT).worker for _ in range(4)] == ["a", "b", "c", "a"]
    least = Router(index, policy="least-loaded")
    loads = {"a": WorkerLoad(1, 900), "b": WorkerLoad(1, 500), "c": WorkerLoad(2, 700)}
    assert least.choose(candidates("a", "b", "c", loads=loads), PROMPT).worker == "b"


def test_a_sessions_later_turns_do_not_turn_the_rotation():
    # Issue 21's fault: 2 workers, 2-turn sessions, one after another: every new
    # session went to worker 0, because each second turn (decided by its cache) also
    # turned the rotation.
    router = Router(KvIndex())
    firsts = []
    for n in range(6):
        prompt = [n + 1, *PROMPT]
        first = router.choose(candidates("a", "b"), prompt, f"s{n}")
        router.routed(f"s{n}", first.worker, prompt)
        firsts.append(first.worker)
        second = router.choose(candidates("a", "b"), [*prompt, 7], f"s{n}")
        assert second.worker == first.worker and second.reason == "session-affinity"
    assert firsts == ["a", "b", "a", "b", "a", "b"]


@settings(max_examples=60, deadline=None)
@given(
    workers=st.integers(min_value=2, max_value=6),
    turns=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=24),
    block_size=st.sampled_from([16, None]),
)
def test_sessions_with_nothing_cached_spread_over_the_workers_within_one(workers, turns, block_size):
    names = [f"w{i}" for i in range(workers)]
    router = Router(KvIndex())
    sessions_on = dict.fromkeys(names, 0)
    for n, count in enumerate(turns):
        session = f"s{n}"
        prompt = [n + 1, *PROMPT]
        placed = None
        for turn in range(count):
            decision = router.choose(candidates(*names, block_size=block_size), prompt, session)
            router.routed(session, decision.worker, prompt)
            assert placed in (None, decision.worker), "a session stays where it started"
            placed = decision.worker
            prompt = [*prompt, turn]
        sessions_on[placed] += 1
    assert max(sessions_on.values()) - min(sessions_on.values()) <= 1
