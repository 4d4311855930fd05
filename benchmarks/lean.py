"""A lean context: injected tokens and hook latency with and without the budget.

    python -m benchmarks.lean [--runs 20]

At 50, 500 and 5,000 key points: the estimated tokens the SessionStart hook injects
with the default budget and with none, and the hook's latency as a whole process
beside the bare interpreter (`python -c pass`), run by run, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from eventlog.decide import ImportLegacy
from eventlog.domain import SECTION_SLUGS
from eventlog.events import Cause
from projections.injection import DEFAULT_BUDGET, estimate_tokens
from projections.repository import PlaybookRepository

ROOT = Path(__file__).resolve().parents[1]
SIZES = (50, 500, 5000)
SESSION_START_ABOVE_BARE_MS = 10.0

_VERBS = ("use", "prefer", "avoid", "check", "run", "keep", "never call", "always pass", "pin", "mock", "log",
          "validate", "cache", "close", "retry", "quote", "split", "name", "document", "measure")
_THINGS = ("pathlib paths", "the test database", "async handlers", "the retry decorator", "msgspec structs",
           "subprocess calls", "environment variables", "the lock file", "unicode filenames", "JSON schemas",
           "the CLI parser", "network timeouts", "fixtures in conftest", "the migration scripts", "type hints",
           "the build cache", "git hooks", "the deploy script", "date parsing", "the config loader")
_WHY = ("because the CI runner is slow", "so failures show the real cause", "when the user asks for speed",
        "or the hook times out", "since the API rate-limits bursts", "to keep diffs small", "in this repository",
        "before committing", "after a schema change", "when tests touch the network", "", "", "")


def lesson(rng: random.Random, i: int) -> str:
    """A key point of realistic shape and length (about 60 to 200 characters)."""
    parts = [rng.choice(_VERBS).capitalize(), rng.choice(_THINGS)]
    for _ in range(rng.randint(0, 3)):
        parts += [rng.choice(("and", "with", "for", "not")), rng.choice(_THINGS)]
    parts.append(rng.choice(_WHY))
    return " ".join(p for p in parts if p) + f" (case {i})"


def playbook_data(entries: int, seed: int = 7) -> dict:
    rng = random.Random(seed)
    sections: dict[str, list[dict]] = {section: [] for section in SECTION_SLUGS}
    for i in range(entries):
        section = rng.choice(list(SECTION_SLUGS))
        slug = SECTION_SLUGS[section]
        sections[section].append({"name": f"{slug}-{len(sections[section]) + 1:03d}", "text": lesson(rng, i),
                                  "helpful": rng.choice((0, 0, 0, 1, 2, 5)), "harmful": rng.choice((0, 0, 0, 0, 1))})
    return {"version": "1.0", "sections": sections}


def seed_project(project: Path, entries: int, budget: int | None = None) -> PlaybookRepository:
    (project / ".claude").mkdir(parents=True, exist_ok=True)
    if budget is not None:
        (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_injection_budget": budget}))
    repo = PlaybookRepository(project / ".claude")
    repo.append([ImportLegacy(data=playbook_data(entries), path="benchmark", genesis=False)], Cause(source="benchmark"))
    return repo


def _run(command: list[str], stdin: bytes, env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, cwd=cwd, capture_output=True, check=False)
    return time.perf_counter() - started, done.stdout


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "AGENTIC_CONTEXT_", "PLAYBOOK_")) and k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"HOME": str(home)}


def measure_injection(runs: int = 20, sizes: tuple[int, ...] = SIZES) -> list[dict]:
    """Per size: tokens injected with the default budget and without one, and hook latencies (seconds)."""
    python = sys.executable
    hook = [python, "-S", str(ROOT / "playbook" / "quick" / "inject.py")]
    stdin = json.dumps({"hook_event_name": "SessionStart", "source": "startup", "session_id": "b"}).encode()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-lean-") as tmp:
        home = Path(tmp) / "home"
        (home / ".claude").mkdir(parents=True)
        env = clean_env(home)
        for size in sizes:
            budgeted, whole = Path(tmp) / f"budget-{size}", Path(tmp) / f"whole-{size}"
            seed_project(budgeted, size)
            seed_project(whole, size, budget=0)
            outputs = {}
            for name, project in (("budget", budgeted), ("whole", whole)):
                _seconds, out = _run(hook, stdin, env | {"CLAUDE_PROJECT_DIR": str(project)}, project)  # projects
                outputs[name] = json.loads(out)["hookSpecificOutput"]["additionalContext"]
            samples: dict[str, list[float]] = {"bare": [], "budget": [], "whole": []}
            for _ in range(runs):
                samples["bare"].append(_run([python, "-c", "pass"], b"", env, Path(tmp))[0])
                samples["budget"].append(_run(hook, stdin, env | {"CLAUDE_PROJECT_DIR": str(budgeted)}, budgeted)[0])
                samples["whole"].append(_run(hook, stdin, env | {"CLAUDE_PROJECT_DIR": str(whole)}, whole)[0])
            rows.append({
                "size": size, "budget": DEFAULT_BUDGET,
                "tokens_budget": estimate_tokens(outputs["budget"]), "tokens_whole": estimate_tokens(outputs["whole"]),
                "bare": statistics.median(samples["bare"]), "hook_budget": statistics.median(samples["budget"]),
                "hook_whole": statistics.median(samples["whole"]),
                "per_key_point": estimate_tokens(outputs["whole"]) / size,
            })
    return rows


# --- UserPromptSubmit ----------------------------------------------------------------------------------


PROMPT_ABOVE_BARE_MS = 20.0


def measure_recall(runs: int = 20, size: int = 5000) -> dict:
    """The UserPromptSubmit hook on a playbook of `size` key points, beside the bare interpreter."""
    python = sys.executable
    hook = [python, "-I", "-S", str(ROOT / "playbook" / "quick" / "recall.py")]
    with tempfile.TemporaryDirectory(prefix="bench-recall-") as tmp:
        home = Path(tmp) / "home"
        (home / ".claude").mkdir(parents=True)
        project = Path(tmp) / "project"
        seed_project(project, size)
        env = clean_env(home) | {"CLAUDE_PROJECT_DIR": str(project)}
        stdin = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "b",
                            "prompt": "The retry decorator and network timeouts keep failing in the deploy script; "
                                      "why?"}).encode()
        _seconds, out = _run(hook, stdin, env, project)
        added = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
        index_bytes = (project / ".claude" / "playbook.recall.json").stat().st_size
        bare, bare_isolated, timed = [], [], []
        for _ in range(runs):
            bare.append(_run([python, "-c", "pass"], b"", env, project)[0])
            bare_isolated.append(_run([python, "-I", "-S", "-c", "pass"], b"", env, project)[0])
            timed.append(_run(hook, stdin, env, project)[0])
    return {"size": size, "bare": statistics.median(bare), "hook": statistics.median(timed),
            "bare_isolated": statistics.median(bare_isolated),
            "added_chars": len(added), "added_lines": max(len(added.splitlines()) - 1, 0), "index_bytes": index_bytes}


# --- deduplication -------------------------------------------------------------------------------------


def measure_dedup(size: int = 5000) -> list[dict]:
    """Precision and recall on the labelled pairs, and the time of `playbook dedup`'s search at `size`
    key points (with 100 planted paraphrases), per available method."""
    sys.path.insert(0, str(ROOT))
    from eventlog import similarity
    from eventlog.decide import decide
    from eventlog.evolve import fold
    from playbook.learner.lean import duplicates_in
    from tests.dedup_pairs import DISTINCT, DUPLICATES

    data = playbook_data(size - len(DUPLICATES))
    planted = []
    for number, (_sa, a, _sb, b) in enumerate(DUPLICATES):
        section = list(SECTION_SLUGS)[number % 5]
        entries = data["sections"][section]
        for text in (a, b):
            entries.append({"name": f"{SECTION_SLUGS[section]}-{len(entries) + 1:03d}", "text": text,
                            "helpful": 0, "harmful": 0})
        planted.append((entries[-2]["name"], entries[-1]["name"]))
    state = fold(decide(fold([]), ImportLegacy(data=data, path="benchmark")))
    methods = [similarity.LEXICAL] + ([similarity.RAPIDFUZZ] if similarity.rapidfuzz_installed() else [])
    rows = []
    for using in methods:
        threshold = similarity.THRESHOLDS[using]
        found = [similarity.similarity(a, b, using) >= threshold for _sa, a, _sb, b in DUPLICATES]
        wrong = [similarity.similarity(a, b, using) >= threshold for _sa, a, _sb, b in DISTINCT]
        precision = sum(found) / max(sum(found) + sum(wrong), 1)
        original = similarity.method
        similarity.method = lambda using=using: using  # type: ignore[assignment]
        try:
            started = time.perf_counter()
            pairs = duplicates_in(state, threshold)
            seconds = time.perf_counter() - started
        finally:
            similarity.method = original  # type: ignore[assignment]
        merged = {frozenset(pair[:2]) for pair in pairs}
        rows.append({"method": using, "threshold": threshold, "precision": precision,
                     "recall": sum(found) / len(DUPLICATES), "seconds": seconds, "size": len(state.where),
                     "planted_found": sum(frozenset(p) in merged for p in planted), "planted": len(planted),
                     "pairs": len(pairs)})
    return rows


# --- a 50-cycle simulation ------------------------------------------------------------------------------

USEFUL = ["Run the database migrations before the integration tests", "Quote every path passed to the deploy script",
          "Pin the protobuf compiler to the version in tools/VERSIONS", "Use the staging token for the billing sandbox",
          "Restart the worker pool after changing the queue settings", "Keep fixtures for the payments API in tests/data",
          "The user wants type hints on every new function", "Regenerate the OpenAPI client after editing the schema",
          "Set PYTHONHASHSEED=0 when comparing snapshot outputs", "Clear the build cache when the linker fails"]
PARAPHRASES = ["Always run the database migrations before the integration tests",
               "Quote each path you pass to the deploy script", "Restart the worker pool after you change queue settings",
               "Regenerate the OpenAPI client whenever the schema is edited", "Clear the build cache if the linker fails"]
HARMFUL = "Disable the pre-commit hooks to commit faster"


def simulate(cycles: int = 50, budget: int = 1500) -> dict:
    """A scripted model through `cycles` learning cycles, decided as the learner decides them (without the
    model calls): three new lessons a cycle, planted useful ones rated and cited, paraphrases of them added
    again, a harmful lesson rated harmful, and a wholesale rewrite in cycle 30."""
    from eventlog.decide import CompleteLearning, Evaluate, Prune, RequestLearning, decide_all
    from eventlog.events import CurationHeld, KeyPointAbsorbed
    from playbook.learner.lean import curation_commands, current_plan, sweep_stale
    from playbook.wiring.settings import LeanSettings

    rng = random.Random(3)
    settings = LeanSettings(stale_after=10, retire_after=25)
    figures = {"max_tokens": 0, "held": 0, "absorbed_duplicates": 0}
    with tempfile.TemporaryDirectory(prefix="bench-simulation-") as tmp:
        project = Path(tmp) / "project"
        (project / ".claude").mkdir(parents=True)
        (project / ".claude" / "playbook.settings.json").write_text(json.dumps({"playbook_injection_budget": budget}))
        old_home = os.environ.get("HOME")
        os.environ["HOME"] = tmp
        try:
            repo = PlaybookRepository(project / ".claude")
            for cycle in range(1, cycles + 1):
                state = repo.state()
                by_text = {kp.text: kp.name for _s, kp in state.entries()}
                operations: list[dict] = [{"type": "ADD", "section": rng.choice(list(SECTION_SLUGS)),
                                           "text": lesson(rng, 10_000 + cycle * 10 + k)} for k in range(3)]
                if cycle <= len(USEFUL):
                    operations.append({"type": "ADD", "section": "PATTERNS & APPROACHES", "text": USEFUL[cycle - 1]})
                if cycle % 7 == 0 and cycle // 7 <= len(PARAPHRASES):
                    operations.append({"type": "ADD", "section": "OTHERS", "text": PARAPHRASES[cycle // 7 - 1]})
                if cycle == 10:
                    operations.append({"type": "ADD", "section": "PATTERNS & APPROACHES", "text": HARMFUL})
                if cycle == 30:  # the curator rewrites the playbook wholesale: one summary, ten deletions
                    names = list(state.where)
                    operations = [{"type": "MERGE", "source_ids": names[10:], "merged_text": "Follow the conventions"}]
                    operations += [{"type": "DELETE", "target_id": name} for name in names[:9]]
                useful = [by_text[text] for text in USEFUL if text in by_text]
                ratings = [{"name": name, "rating": "helpful", "rationale": "applied"}
                           for name in useful if rng.random() < 0.5]
                if HARMFUL in by_text:
                    ratings.append({"name": by_text[HARMFUL], "rating": "harmful", "rationale": "broke CI"})
                cited = [name for name in useful if rng.random() < 0.3]
                request = f"cycle-{cycle}"
                repo.append([RequestLearning(request=request, hook="SessionEnd", transcript=f"/t/{cycle}.jsonl")],
                            Cause(source="hook:SessionEnd"))

                def decider(fresh, ratings=ratings, operations=operations, cited=cited, request=request,
                            cycle=cycle):
                    commands, _held = curation_commands(fresh, ratings, operations, settings)
                    return decide_all(fresh, [Evaluate(ratings), *commands, Prune(), CompleteLearning(
                        request=request, transcript=f"/t/{cycle}.jsonl", from_line=0, through_line=10, cited=cited,
                        injected=current_plan(repo, fresh).included)])

                committed = repo.append(decider, Cause(source="hook:SessionEnd", session=request))
                assert committed is not None
                figures["held"] += sum(isinstance(e, CurationHeld) for e in committed.events)
                figures["absorbed_duplicates"] += sum(isinstance(e, KeyPointAbsorbed) for e in committed.events)
                sweep_stale(repo, settings, request)
                planned = current_plan(repo)
                figures["max_tokens"] = max(figures["max_tokens"], planned.tokens)
            state = repo.state()
            planned = current_plan(repo, state)
            injected_texts = {state.get(name).text for name in planned.included if state.get(name)}
            texts = {kp.text for _s, kp in state.entries()}
        finally:
            if old_home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = old_home
    return {**figures, "cycles": cycles, "budget": budget, "useful": len(USEFUL),
            "useful_injected": sum(text in injected_texts for text in USEFUL),
            "duplicates_planted": len(PARAPHRASES),
            "duplicates_surviving": sum(text in texts for text in PARAPHRASES),
            "harmful_present": HARMFUL in texts, "entries": len(texts),
            "stale_or_retired": cycles * 3 - len(texts) + len(USEFUL)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    ok = True
    for row in measure_injection(args.runs):
        above = (row["hook_budget"] - row["bare"]) * 1000
        ok &= above <= SESSION_START_ABOVE_BARE_MS
        print(f"{row['size']:>5} key points: injected {row['tokens_budget']:>6} tokens with the budget "
              f"({row['budget']}) vs {row['tokens_whole']:>7} without ({row['per_key_point']:.1f} per key point); "
              f"hook {row['hook_budget'] * 1000:.1f} ms / {row['hook_whole'] * 1000:.1f} ms vs bare "
              f"{row['bare'] * 1000:.1f} ms ({above:+.1f} ms)")
    recall = measure_recall(args.runs)
    above = (recall["hook"] - recall["bare"]) * 1000
    ok &= above <= PROMPT_ABOVE_BARE_MS
    print(f"UserPromptSubmit at {recall['size']} key points: {recall['hook'] * 1000:.1f} ms vs bare "
          f"{recall['bare'] * 1000:.1f} ms ({above:+.1f} ms), and {recall['bare_isolated'] * 1000:.1f} ms for "
          f"`python -I -S -c pass`; added {recall['added_lines']} key points, "
          f"{recall['added_chars']} characters; index {recall['index_bytes'] / 1024:.0f} KiB")
    for row in measure_dedup():
        print(f"dedup ({row['method']}, threshold {row['threshold']}): precision {row['precision']:.3f}, recall "
              f"{row['recall']:.3f} on the labelled pairs; {row['seconds']:.2f} s over {row['size']} key points, "
              f"{row['planted_found']}/{row['planted']} planted pairs found, {row['pairs']} pairs in all")
    sim = simulate()
    ok &= sim["max_tokens"] <= sim["budget"] and sim["useful_injected"] == sim["useful"]
    print(f"simulation of {sim['cycles']} cycles: {sim['useful_injected']}/{sim['useful']} planted useful lessons "
          f"injected at the end; {sim['duplicates_surviving']}/{sim['duplicates_planted']} planted duplicates "
          f"survive ({sim['absorbed_duplicates']} absorbed); harmful lesson {'present' if sim['harmful_present'] else 'gone'}; "
          f"{sim['held']} destructive reply held; injected tokens at most {sim['max_tokens']} (budget {sim['budget']})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
