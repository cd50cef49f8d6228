#!/usr/bin/env bash
# One training stage on a lent GPU machine, sized for its device time (15 minutes a session, the
# start included; 10 minutes a command), in four steps (models/README.md, "Training"):
#
#   lab/gpu-stage.sh    prepare              here: the training decks and backgrounds into an
#                                            ignored shared/ of the checkout, which travels
#   lab/gpu-stage.sh    device [WAIT_S]      there (the device tool's command): start the stage
#                                            once, wait on it up to WAIT_S seconds (default 540),
#                                            and send back what it has made so far ($OUT)
#   lab/gpu-stage.sh    anneal [MINUTES [WAIT_S]]  there, the next call on the same machine: the
#                                            stage's nets on for MINUTES more (default 2.8) at 0.3
#                                            times the learning rate, on the same cached scenes
#                                            (waits up to WAIT_S, default 300)
#   lab/gpu-stage.sh    finish FILES OUT SEED  here: export the nets sent back (FILES) into OUT,
#                                            fit the acceptance rule, and pair them with the
#                                            committed model, and with a control (its nets, the
#                                            rule fitted again here: OUT.control), on fresh
#                                            scenes of the training decks (seeds SEED to SEED+2);
#                                            then the same for the average of the stage's nets
#                                            and the committed ones (OUT.mean), against the
#                                            control (or the committed model)
#
# A second `device` (or `anneal`) call on the same warm machine starts nothing: it waits on the
# same run. Measured on an H200 (seed 23): `device` returned after 462 s (503 s of
# device time with the start), `anneal` after 227 s (741 s in all).
# The stage (environment, with their defaults): STAGE_SEED=24, STAGE_SCENES=12000 plain scenes,
# STAGE_LENS=3000 through a lens, STAGE_BACKS=1000 rich in face-down cards, STAGE_MINUTES=5.5 of
# training, STAGE_WORKERS=15, STAGE_DEVICE=cuda, STAGE_EXTRA (more `companion train` options for
# the stage, e.g. "--localizer-width 2" or "--lr-scale 0.5"), ANNEAL_LR_SCALE=0.3,
# STAGE_WORK=/tmp/gpu-stage (its folder); for `finish`, FINISH_CONTROL=0 skips the control and
# FINISH_AVERAGE=0 the average.
set -u
called_from=$PWD
cd "$(dirname "$0")/.."
here=$PWD
# the lab runs from the checkout whether it is installed or not (a device machine has a copy)
export PYTHONPATH="$here/lab${PYTHONPATH:+:$PYTHONPATH}"
python=${PYTHON:-python3}
work=${STAGE_WORK:-/tmp/gpu-stage} # on the device: the stage's scenes, runs and logs

usage() {
	sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
}

train_decks() { # the decks a stage trains on: training.TRAIN_DECKS, never the held-out deck
	"$python" -c 'from companion_lab.training import TRAIN_DECKS; print(*TRAIN_DECKS)'
}

alive() { # the process lives and is no zombie (its state, after the name in /proc/PID/stat)
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) && stat=${stat##*) } && [ "${stat:0:1}" != Z ]
}

prepare() {
	local shared=${COMPANION_SHARED:-$here/../shared}
	[ -d "$shared/decks" ] || { echo "no decks in $shared: set COMPANION_SHARED"; exit 2; }
	mkdir -p shared/decks .git/info
	grep -qx '/shared/' .git/info/exclude 2>/dev/null || echo '/shared/' >>.git/info/exclude
	local decks
	decks=$(train_decks) || exit 2
	for deck in $decks; do
		cp -r "$shared/decks/$deck" shared/decks/
	done
	cp -r "$shared/backgrounds" shared/
	echo "shared/ holds $(du -sh shared | cut -f1); the checkout that travels (64 MiB at most):"
	git ls-files -z --others --cached --exclude-standard | du -ch --files0-from=- | tail -1
	echo "  plus shared/; remove shared/ once the stage is back (rm -r shared)"
}

# start `companion train --resume FROM --out OUT ...` once, detached (its pid in PIDFILE: a
# second call starts nothing and waits on the same run), wait on it up to WAIT_S seconds, and
# send back to $OUT its log (LOG), a GPU and host memory sample every 30 s, and once it has ended
# recognizer.json and both checkpoints; until then, the last whole epoch's weights (*.partial.pt)
run_detached() {
	local wait_s=$1 pidfile=$2 log=$3 from=$4 out=$5
	shift 5
	local what=${log%.log} # "stage" or "anneal", in the messages
	local sent=${OUT:-$work/sent}
	mkdir -p "$work" "$sent"
	# the decks travel in the checkout's shared/; else ../shared or $COMPANION_SHARED as usual
	[ -d shared/decks ] && export COMPANION_SHARED=$here/shared
	export PYTHONUNBUFFERED=1
	if [ ! -f "$pidfile" ]; then
		setsid nohup "$python" -m companion_lab train --resume "$from" --out "$out" \
			--scenes "${STAGE_SCENES:-12000}" --lens-scenes "${STAGE_LENS:-3000}" \
			--back-scenes "${STAGE_BACKS:-1000}" --seed "${STAGE_SEED:-24}" \
			--cache "$work/cache" --workers "${STAGE_WORKERS:-15}" \
			--device "${STAGE_DEVICE:-cuda}" "$@" >"$work/$log" 2>&1 </dev/null &
		echo $! >"$pidfile"
		setsid nohup bash -c "while [ -e /proc/$(cat "$pidfile") ]; do { date +%T; nvidia-smi --query-gpu=memory.used,utilization.gpu \
			--format=csv,noheader 2>/dev/null; free -g | sed -n 2p; } >>'$work/usage.log'; sleep 30; done" \
			>/dev/null 2>&1 </dev/null &
		echo "$what started (pid $(cat "$pidfile")), log in $work/$log"
	fi
	local pid end=$((SECONDS + wait_s))
	pid=$(cat "$pidfile")
	while alive "$pid" && [ "$SECONDS" -lt "$end" ]; do sleep 2; done
	cp "$work/$log" "$sent/" 2>/dev/null
	cp "$work/usage.log" "$sent/" 2>/dev/null
	if alive "$pid"; then
		# the last whole epoch's weights, should no later call come to collect the run
		for net in localizer classifier; do
			cp "$out/resume-work/$net.ckpt" "$sent/$net.partial.pt" 2>/dev/null
		done
		echo "$what still running after ${wait_s}s: call the same command again to wait on it"
		tail -n 3 "$work/$log"
		return 3
	fi
	if [ -f "$out/recognizer.json" ] && [ -f "$out/checkpoints/classifier.pt" ]; then
		cp "$out/recognizer.json" "$out/checkpoints/localizer.pt" "$out/checkpoints/classifier.pt" \
			"$sent/"
		echo "$what finished: recognizer.json and both checkpoints sent back"
		tail -n 3 "$work/$log"
		return 0
	fi
	echo "the $what ended without a model; the end of its log:"
	tail -n 20 "$work/$log"
	return 1
}

device() { # the stage: both nets from the committed model, on fresh scenes
	# shellcheck disable=SC2086  # STAGE_EXTRA is a list of options
	run_detached "${1:-540}" "$work/pid" stage.log companion/models/ "$work/out" \
		--minutes "${STAGE_MINUTES:-5.5}" ${STAGE_EXTRA:-}
}

anneal() { # the stage's nets on for a few minutes more at a lower learning rate, same scenes
	if [ ! -f "$work/out/recognizer.json" ] || { [ -f "$work/pid" ] && alive "$(cat "$work/pid")"; }; then
		echo "no finished stage in $work/out: run 'lab/gpu-stage.sh device' until it says finished"
		return 2
	fi
	run_detached "${2:-300}" "$work/anneal.pid" anneal.log "$work/out" "$work/anneal" \
		--minutes "${1:-2.8}" --lr-scale "${ANNEAL_LR_SCALE:-0.3}"
}

fit_rule() { # the acceptance rule of the model MODEL_JSON, fitted again as the committed one was
	"$python" -m companion_lab fit-acceptance --model "$1" --seed "${FINISH_RULE_SEED:-300}" \
		--n "${FINISH_RULE_N:-1500}" --trees "${FINISH_TREES:-100}" --above "${FINISH_ABOVE:-0.775}"
}

pair() { # MODEL_JSON against the model in DIR on fresh scenes of DECK, seed SEED: pair M DIR DECK SEED
	"$python" -m companion.cli eval --deck "$3" --seed "$4" --n "${FINISH_EVAL_N:-600}" --workers 2 \
		--model "$1" --against "$2" --json
}

finish() {
	[ $# -eq 3 ] || usage
	local files=$1 out=$2 seed=$3
	# paths as given where the script was called from (it runs in the repository root)
	[ "${files#/}" = "$files" ] && files=$called_from/$files
	[ "${out#/}" = "$out" ] && out=$called_from/$out
	local from=$out.from-device
	set -e
	if [ -f "$files/recognizer.json" ]; then
		mkdir -p "$from/checkpoints"
		cp "$files/recognizer.json" "$from/"
		cp "$files/localizer.pt" "$files/classifier.pt" "$from/checkpoints/"
	elif [ -f "$files/localizer.partial.pt" ] && [ -f "$files/classifier.partial.pt" ]; then
		# cut short: the last whole epochs, described by the committed model's metadata (the
		# stage's own entry is missing: write it into recognizer.json by hand if it is kept)
		echo "no recognizer.json in $files: exporting the partial checkpoints"
		mkdir -p "$from/checkpoints"
		cp companion/models/recognizer.json "$from/"
		cp "$files/localizer.partial.pt" "$from/checkpoints/localizer.pt"
		cp "$files/classifier.partial.pt" "$from/checkpoints/classifier.pt"
	else
		echo "$files holds neither recognizer.json nor partial checkpoints"
		exit 2
	fi
	"$python" -m companion_lab train --export-from "$from" --out "$out"
	fit_rule "$out/recognizer.json"
	local control=$out.control with_control=${FINISH_CONTROL:-1}
	if [ "$with_control" != 0 ]; then
		# the committed nets with their rule fitted again the same way, on this machine: the rule
		# fitted to the nets that run gives part of any gain by itself (0.10 points, measured once),
		# so the stage's gain over this control is the nets' own
		rm -rf "$control"
		mkdir -p "$control"
		cp companion/models/recognizer.json companion/models/*.onnx "$control/"
		fit_rule "$control/recognizer.json"
	fi
	local mean=
	if [ "${FINISH_AVERAGE:-1}" != 0 ]; then
		# the stage's nets averaged with the ones they started from, weight by weight: an
		# average can find more cards than either model alone
		rm -rf "$out.mean"
		if "$python" -m companion_lab train --export-from companion/models --average-with "$out" --out "$out.mean"; then
			mean=$out.mean
			fit_rule "$mean/recognizer.json"
		else
			echo "no average: the stage's nets are not the committed ones' shape"
		fi
	fi
	local s=$seed against=companion/models
	[ "$with_control" != 0 ] && against=$control
	for deck in $(train_decks); do
		pair "$out/recognizer.json" companion/models "$deck" "$s" >"$out/eval-$deck-$s.json"
		if [ "$with_control" != 0 ]; then
			pair "$out/recognizer.json" "$control" "$deck" "$s" >"$out/control-$deck-$s.json"
		fi
		if [ -n "$mean" ]; then
			pair "$mean/recognizer.json" "$against" "$deck" "$s" >"$out/mean-$deck-$s.json"
		fi
		s=$((s + 1))
	done
	"$python" - "$out" <<'EOF'
import json, pathlib, sys

out = pathlib.Path(sys.argv[1])
pairs = []  # (the stage against the committed model, the stage against the control or None)
for path in sorted(out.glob("eval-*.json")):
    control = path.with_name("control-" + path.name[len("eval-"):])
    pairs.append((json.loads(path.read_text()),
                  json.loads(control.read_text()) if control.is_file() else None))


def pair(a):
    low, high = a["intervals"]["recall"] or (float("nan"), float("nan"))
    return (f"{100 * a['recall']:.2f} %, {a['false_positives_per_image']:.3f} | "
            f"{100 * a['difference']['recall']:+.2f} points ({100 * low:+.2f} to {100 * high:+.2f})")


class Pool:
    """Cards found and false cards of named models over paired runs, for the pooled row."""

    def __init__(self, *names):
        self.need = self.images = 0
        self.found, self.fps = dict.fromkeys(names, 0), dict.fromkeys(names, 0)

    def add(self, run, **models):  # run: one eval's JSON; models: name -> its figures
        self.need += run["labels"]
        self.images += run["images"]
        for name, figures in models.items():
            self.found[name] += round(figures["recall"] * run["labels"])
            self.fps[name] += figures["false_positives"]

    def __getitem__(self, name):
        return f"{100 * self.found[name] / self.need:.2f} %, {self.fps[name] / self.images:.3f}"


with_control = all(c for _, c in pairs) and bool(pairs)
print("| deck, seed | cards | stage: recall, false cards / image | committed | recall difference "
      "(95 % interval) |" + (" control: committed nets, rule fitted again | recall difference |"
                            if with_control else ""))
print("|---|---|---|---|---|" + ("---|---|" if with_control else ""))
pool = Pool("stage", "committed", "control")
for r, c in pairs:
    row = (f"| {r['deck']} {r['seed']} | {r['labels']:,} | {100 * r['recall']:.2f} %, "
           f"{r['false_positives_per_image']:.3f} | {pair(r['against'])} |")
    print(row + (f" {pair(c['against'])} |" if with_control else ""))
    pool.add(r, stage=r, committed=r["against"], **({"control": c["against"]} if c else {}))
if pool.need:
    print(f"| pooled | {pool.need:,} | {pool['stage']} | {pool['committed']} | |"
          + (f" {pool['control']} | |" if with_control else ""))

means = [json.loads(p.read_text()) for p in sorted(out.glob("mean-*.json"))]
if means:
    base = "control" if with_control else "committed"
    print(f"\nThe stage averaged with the committed nets ({out}.mean), against the {base}:\n")
    print(f"| deck, seed | cards | average: recall, false cards / image | {base} | recall "
          "difference (95 % interval) |")
    print("|---|---|---|---|---|")
    pool = Pool("average", base)
    for r in means:
        print(f"| {r['deck']} {r['seed']} | {r['labels']:,} | {100 * r['recall']:.2f} %, "
              f"{r['false_positives_per_image']:.3f} | {pair(r['against'])} |")
        pool.add(r, average=r, **{base: r["against"]})
    print(f"| pooled | {pool.need:,} | {pool['average']} | {pool[base]} | |")
EOF
}

case "${1:-}" in
prepare) prepare ;;
device) shift; device "$@" ;;
anneal) shift; anneal "$@" ;;
finish) shift; finish "$@" ;;
*) usage ;;
esac
