"""The benchmark's log generator writes valid logs: folding the file gives the state of the same events in memory."""

from __future__ import annotations

from benchmarks.fold import Generator, fold_file, write_log
from eventlog.events import Event, TransactionCommitted
from eventlog.evolve import fold
import pytest


def test_generated_log_folds_to_the_state_of_its_events_in_memory(tmp_path):
    records: list[Event | TransactionCommitted] = []
    generator = Generator(seed=11, live=60, validate=True)  # validate: scratch decide == decide on the full state
    info = write_log(tmp_path / "log.jsonl", 2000, keep=records, generator=generator)

    events = [r for r in records if not isinstance(r, TransactionCommitted)]
    commits = [r for r in records if isinstance(r, TransactionCommitted)]
    assert (info.events, len(events), len(commits)) == (2000, 2000, info.transactions)
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
    assert {"KeyPointAdded", "KeyPointEvaluated", "KeyPointDeleted", "KeyPointPruned"} <= set(info.mix)

    in_memory = fold(events)
    in_memory.seq = commits[-1].seq
    from_file = fold_file(tmp_path / "log.jsonl")
    assert from_file == in_memory == generator.state
    assert 30 <= len(from_file.where) <= 90


@pytest.mark.slow
def test_the_merge_benchmark_runs_the_driver_and_checks_what_it_wrote(tmp_path):
    from benchmarks.merge import measure, met_targets

    figures = measure(events=3000, side=30, keep=tmp_path, say=lambda text: None)
    assert figures["code"] == 0 and str(figures["check"]).startswith("ok")
    assert figures["ours_events"] > figures["shared_events"] < figures["theirs_events"]
    assert met_targets(figures) == (float(figures["cpu"]) < 2.0 and float(figures["peak_mb"]) < 200.0)


@pytest.mark.slow
def test_the_sync_benchmark_converges_and_prints_its_figures(tmp_path):
    from benchmarks.sync import measure, met_targets

    figures = measure(clones=3, events=300, rounds=2, keep=tmp_path)
    assert figures["identical"] is True and figures["lost"] == 0 and figures["doubled"] == 0
    assert figures["verify"] == "clean" and figures["syncs"] == 3 * 4 and figures["lessons"] >= 6
    assert met_targets(figures) == (float(figures["merge_median_s"]) < 1.0)


@pytest.mark.slow
def test_the_append_benchmarks_run_and_put_the_log_back_between_appends(tmp_path):
    from benchmarks.fold import Table, bench_append, bench_append_scale

    table = Table()
    figures = bench_append(table, tmp_path / "one", appends=4, seed_events=300)
    scale = bench_append_scale(table, tmp_path / "two", appends=4, small=50, large=300, run=2)
    assert figures and scale and not [row for row in table.rows if "could not run" in row[1]]
