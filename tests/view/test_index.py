"""The attempts page's index cache (:class:`redline.view.index.IndexCache`): it never answers with
entries older than the store (a running run, a resumed run, labels), and it holds at most its
memory budget, whatever the size of the runs."""

from __future__ import annotations

import tracemalloc

from helpers.html_dom import parse
from helpers.view_runs import build_large_run, client_for, large_attempt
from redline.store import RUN_COMPLETE, RUN_RUNNING, Store
from redline.view.index import IndexCache, entry_size, read_entries


def seqs(entries) -> list[tuple[str, int]]:
    return [(e.probe, e.seq) for e in entries]


def test_the_size_estimate_is_not_below_what_the_entries_take(large_store):
    path, run_id = large_store
    with Store(path) as store:
        list(read_entries(store, run_id))  # warm up: imports and caches are not the entries' memory
        tracemalloc.start()
        try:
            entries = list(read_entries(store, run_id))
            taken, _ = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert len(entries) == 400
    assert sum(entry_size(e) for e in entries) >= taken


def test_runs_beyond_the_budget_are_dropped_oldest_first(tmp_path, counted_reads):
    path = tmp_path / "runs.db"
    store, first = build_large_run(path, attempts=40, probes=2)
    second = build_large_run(path, attempts=40, probes=2)[1]
    one_run = sum(entry_size(e) for e in read_entries(store, first))
    cache = IndexCache(budget=one_run * 3 // 2)  # room for one run, not two
    counted_reads.clear()
    for run_id in (first, first, second, second, first):
        entries = cache.entries(store, store.get_run(run_id))
        assert len(list(entries)) == 40
        assert 0 < cache.size <= cache.budget
    # first read, second read, first read again (it was dropped for the second)
    assert [args[0] for args in counted_reads] == [first, second, first]
    store.close()


def test_a_run_larger_than_the_budget_is_read_each_time_and_not_kept(tmp_path, counted_reads):
    path = tmp_path / "large.db"
    store, run_id = build_large_run(path, attempts=40, probes=2)
    cache = IndexCache(budget=10 * entry_size(next(read_entries(store, run_id))))
    run = store.get_run(run_id)
    everything = seqs(read_entries(store, run_id))
    counted_reads.clear()
    assert seqs(cache.entries(store, run)) == everything  # complete, though it could not be kept
    assert cache.size == 0
    probe = "harmful.Probe0"
    assert seqs(cache.entries(store, run, probe)) == [(probe, seq) for seq in range(20)]
    assert counted_reads == [(run_id, None), (run_id, probe)]  # later: only the probe asked for
    store.close()


def test_a_running_run_is_read_afresh_every_time(tmp_path):
    path = tmp_path / "live.db"
    scan = Store(path)  # holds the run's lock, as a scan does
    run_id = scan.create_run("scripted:live", {"probe_names": ["harmful.P"]})
    scan.save_attempt(run_id, large_attempt("harmful.P", 0))
    cache = IndexCache()
    with Store(path) as view:
        run = view.get_run(run_id)
        assert run.status == RUN_RUNNING and len(list(cache.entries(view, run))) == 1
        scan.save_attempt(run_id, large_attempt("harmful.P", 1))
        assert len(list(cache.entries(view, view.get_run(run_id)))) == 2
        assert cache.size == 0
    scan.close()


def test_a_resumed_run_is_read_again_even_when_its_attempt_count_did_not_change(tmp_path):
    path = tmp_path / "resumed.db"
    store, run_id = build_large_run(path, attempts=8, probes=1)
    cache = IndexCache()
    assert {e.outcome for e in cache.entries(store, store.get_run(run_id)) if e.seq == 1} == {"pass"}
    # a resume with --retry-errors: running again, an attempt rewritten in place, complete again
    store.claim_run(run_id)
    store.set_run_status(run_id, RUN_RUNNING)
    rewritten = large_attempt("harmful.Probe0", 1)
    rewritten.notes["evaluation"] = ["fail", "fail"]
    store.save_attempt(run_id, rewritten)
    assert store.count_attempts(run_id) == 8
    assert {e.outcome for e in cache.entries(store, store.get_run(run_id)) if e.seq == 1} == {"fail"}
    store.set_run_status(run_id, RUN_COMPLETE)
    store.release_run(run_id)
    assert {e.outcome for e in cache.entries(store, store.get_run(run_id)) if e.seq == 1} == {"fail"}
    store.close()


def test_a_label_shows_on_the_cached_attempts_page_at_once(tmp_path, counted_reads):
    path = tmp_path / "labels.db"
    store, run_id = build_large_run(path, attempts=20, probes=1)
    store.close()
    counted_reads.clear()
    client = client_for(path)
    url = f"/runs/{run_id}/attempts"
    row = 'tr.attempt[data-seq="3"]'
    assert parse(client.get(url).text).one(row).select("td")[-1].text == ""
    attempt = parse(client.get(f"/runs/{run_id}/attempt?probe=harmful.Probe0&seq=3").text)
    token = attempt.select("form.review input[name=csrf]")[0].get("value")
    form = {"probe": "harmful.Probe0", "seq": "3", "output": "1", "label": "false_negative", "csrf": token}
    assert client.post(f"/runs/{run_id}/reviews", data=form).status_code == 303
    doc = parse(client.get(url).text)
    assert doc.one(row).select("td")[-1].text == "1"  # labelled outputs of the attempt
    assert [tr.get("data-seq") for tr in parse(client.get(url + "?disagree=1").text).select("tr.attempt")] == [
        "0",
        "3",
        "13",
    ]
    assert len(counted_reads) == 1  # the attempts were read once; the labels on every page


def test_the_attempt_page_and_a_label_read_one_attempt_not_the_probe(hostile_copy, monkeypatch):
    path, run_id = hostile_copy
    client = client_for(path)

    def refused(*args, **kwargs):
        raise AssertionError("the attempt page streamed the probe's attempts")

    monkeypatch.setattr(Store, "iter_attempt_entries", refused)
    doc = parse(client.get(f"/runs/{run_id}/attempt?probe=demo.MultiTurn&seq=0").text)
    token = doc.select("form.review input[name=csrf]")[0].get("value")
    form = {"probe": "demo.MultiTurn", "seq": "0", "output": "1", "label": "correct", "csrf": token}
    assert client.post(f"/runs/{run_id}/reviews", data=form).status_code == 303
    huge = client.get(f"/runs/{run_id}/attempt?probe=demo.MultiTurn&seq={2**70}")  # beyond SQLite's integers
    assert huge.status_code == 404 and "no attempt" in parse(huge.text).one("#message").text
