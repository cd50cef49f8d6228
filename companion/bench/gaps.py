"""The camera away over each kind of moment, measured: a simulated match replayed with the
stream cut (``replay --drop-at``) and the pipeline restarted (``replay --restart-at``) at a
capture, a Koi, a Stop, the gathering and the next deal, for each length of cut.

    python -m companion.bench.gaps --video D/table.mp4 --truth D/truth.json --json

Each cell is scored ``exact`` (every round scored as the truth, the questions the camera put
to the tablet answered as the truth's players would; a round the plain replay scores wrong
too, the camera's own miss, does not count against a cell), ``pending`` (a round not scored
yet, with a question on the tablet still open: nothing silently wrong) or ``wrong`` (a round
scored otherwise than the truth with nothing asked, or a round that never was: silently
wrong). The detector's looks are
kept per picture, so every cell after the first costs the pipeline's work, not the nets'.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import time
from pathlib import Path

import numpy as np

from companion.bench.replay import load_truth, question_of, replay_video
from companion.bench.restart import replay_with_restarts

CUT_SECONDS = (2.0, 8.0, 19.0, 60.0)
MOMENTS = ("capture", "koi", "stop", "gathering", "deal")
LEAD_S = 1.0  # a cut starts this long before its moment; a restart comes this long after
FINAL_HOLD_S = 2.0  # the simulated round's final table lies still this long before the sweep


class RememberingDetector:
    """A detector that looks at each distinct picture once: the same picture (a video played
    again, replayed in another cell) gets the looks it got the first time. Pictures are told
    apart by every third pixel of every third row (a decoded video's frames differ there)."""

    def __init__(self, detector):
        self.inner = detector
        self.looks: dict[bytes, object] = {}
        self.hits = 0

    def detect(self, image):
        sample = np.ascontiguousarray(image[::3, ::3])
        key = hashlib.md5(sample.data, usedforsecurity=False).digest() + bytes(
            str(image.shape), "ascii"
        )
        found = self.looks.get(key)
        if found is None:
            found = self.looks[key] = self.inner.detect(image)
        else:
            self.hits += 1
        return found

    def __getattr__(self, name):  # verify_quad, namer, ...: the detector's own
        return getattr(self.inner, name)

    def __setattr__(self, name, value):
        if name in ("inner", "looks", "hits"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)


def moments(truth: dict) -> dict:
    """Each kind of moment's frame in the truth: the first capture's card lying still, the
    first Koi and Stop called, the gathering after the first round that ended with another
    after it (its final table lies still ``FINAL_HOLD_S`` after its Stop or its cards ran
    out, then the players sweep it), and the next round's deal (its first frame). A kind the
    match lacks is left out."""
    fps = float(truth.get("fps") or 10)
    rounds = sorted(truth.get("rounds", []), key=lambda r: r["round"])
    found: dict[str, int] = {}
    ends = []  # (frame, kind) of each round's end
    for item in truth.get("events", []):
        kind = item["event"].get("type")
        if kind == "card_captured" and "capture" not in found:
            found["capture"] = int(item.get("steady_frame", item["frame"]))
        elif kind == "koi_called" and "koi" not in found:
            found["koi"] = int(item["frame"])
        elif kind == "stop_called" and "stop" not in found:
            found["stop"] = int(item["frame"])
        if kind in ("stop_called", "cards_ran_out"):
            ends.append(int(item["frame"]))
    for ended, following in zip(rounds, rounds[1:], strict=False):
        last = ended.get("last_frame")
        end = next((f for f in ends if f <= (last if last is not None else f)), None)
        if last is None or end is None:
            continue
        found["gathering"] = end + int(round(FINAL_HOLD_S * fps))
        found["deal"] = int(following.get("first_frame", last + 1))
        break
    return found


def _verdict(report, pending: bool) -> str:
    if report.rounds_exact == report.rounds_total and not pending:
        return "exact"
    return "pending" if pending else "wrong"


def _cell(report, pipeline_question, baseline=()) -> dict:
    """A cell's figures and verdict; ``baseline``: the rounds the plain replay scores wrong
    (the camera's own misses, not the cut's), which do not count against the cell."""
    wrong_rounds = [r.round for r in report.rounds if r.truth_points is not None and not r.exact]
    extra = [r.round for r in report.rounds if r.truth_points is None]
    pending = pipeline_question is not None
    verdict = _verdict(report, pending)
    if verdict == "wrong" and wrong_rounds and set(wrong_rounds) <= set(baseline):
        verdict = "exact"  # wrong as the plain replay is, nothing more
    if verdict == "exact" and extra:
        verdict = "wrong"  # a round that never was
    return {
        "verdict": verdict,
        "rounds_exact": report.rounds_exact,
        "rounds_total": report.rounds_total,
        "wrong_rounds": wrong_rounds,
        "extra_rounds": extra,
        "asked": report.asked,
        "question_open": pipeline_question,
        "captures_missed": report.captures_missed,
        "captures_added": report.captures_added,
        "captures_misnamed": report.captures_misnamed,
    }


def run_matrix(
    video, truth: dict, detector, *, cuts=CUT_SECONDS, kinds=MOMENTS, restarts=True,
    restart_from: str = "start", taps: str = "none", progress=None,
) -> dict:  # fmt: skip
    """The matrix's cells (see the module docstring), with the plain replay as a baseline;
    ``progress(cell)`` is called as each is done."""
    remembering = detector if isinstance(detector, RememberingDetector) else None
    remembering = remembering or RememberingDetector(detector)
    fps = float(truth.get("fps") or 10)
    at = moments(truth)
    started = time.perf_counter()
    out: dict = {"moments": at, "fps": fps, "taps": taps, "cells": []}
    last = {}

    def keep(report, kind, how, seconds):
        baseline = out["plain"]["wrong_rounds"] if "plain" in out else ()
        cell = {
            "moment": kind, "how": how, "seconds": seconds,
            **_cell(report, last["open"], baseline),
        }  # fmt: skip
        out["cells"].append(cell)
        if progress is not None:
            progress(cell)
        return cell

    def ended_with(pipeline, store, match_id):
        last["open"] = question_of(pipeline, store.state(match_id))

    plain = replay_video(video, remembering, truth=truth, taps=taps, on_end=ended_with)
    out["plain"] = keep(plain, None, "plain", 0)
    for kind in kinds:
        if kind not in at:
            continue
        for seconds in cuts:
            first = max(0, at[kind] - int(round(LEAD_S * fps)))
            report = replay_video(
                video, remembering, truth=truth, taps=taps, drops=[(first, seconds)],
                on_end=ended_with,
            )  # fmt: skip
            keep(report, kind, "drop", seconds)
        if restarts:
            frame = at[kind] + int(round(LEAD_S * fps))
            report = replay_with_restarts(
                video, remembering, truth=truth, restarts=[frame],
                from_start=restart_from == "start", taps=taps, on_end=ended_with,
            )  # fmt: skip
            keep(report, kind, f"restart-from-{restart_from}", 0)
    verdicts = [c["verdict"] for c in out["cells"]]
    out["summary"] = {v: verdicts.count(v) for v in ("exact", "pending", "wrong")}
    # of the exact cells, those the tablet was asked about (the question answered as the
    # truth's players would): exact after asking, not read from the table
    out["summary"]["exact_after_asking"] = sum(
        1 for c in out["cells"] if c["verdict"] == "exact" and c["asked"]
    )
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["looks_remembered"] = remembering.hits
    return out


def main(argv=None) -> int:
    import argparse
    import sys

    from companion.recognizer import Recognizer

    parser = argparse.ArgumentParser(
        prog="python -m companion.bench.gaps", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--video", required=True)
    parser.add_argument("--truth", required=True)
    parser.add_argument("--cuts", default=",".join(f"{s:g}" for s in CUT_SECONDS))
    parser.add_argument("--moments", default=",".join(MOMENTS))
    parser.add_argument("--restart-from", choices=("start", "here"), default="start")
    parser.add_argument("--no-restarts", action="store_true")
    parser.add_argument("--taps", choices=("none", "truth"), default="none")
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--looks", help="A file keeping the detector's looks between runs on the same video."
    )
    args = parser.parse_args(argv)
    truth = load_truth(args.truth)
    detector = RememberingDetector(Recognizer.load(None, threads=2, nets="auto"))
    if args.looks and Path(args.looks).is_file():
        detector.looks = pickle.loads(Path(args.looks).read_bytes())
    known = len(detector.looks)

    def progress(cell):
        print(_line(cell), file=sys.stderr, flush=True)
        if args.looks and len(detector.looks) > known:
            Path(args.looks).write_bytes(pickle.dumps(detector.looks))

    result = run_matrix(
        Path(args.video), truth, detector,
        cuts=tuple(float(s) for s in args.cuts.split(",") if s),
        kinds=tuple(k for k in args.moments.split(",") if k),
        restarts=not args.no_restarts, restart_from=args.restart_from, taps=args.taps,
        progress=progress,
    )  # fmt: skip
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        for cell in result["cells"]:
            print(_line(cell))
        print(json.dumps(result["summary"]))
    return 0


def _line(c: dict) -> str:
    return (
        f"{c['moment'] or '-':10} {c['how']:20} {c['seconds']:5g} s  {c['verdict']:8}"
        f" exact {c['rounds_exact']}/{c['rounds_total']} asked {c['asked']}"
        f" missed/added/misnamed {c['captures_missed']}/{c['captures_added']}"
        f"/{c['captures_misnamed']} open {c['question_open']}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
