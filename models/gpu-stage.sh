#!/usr/bin/env bash
# One training stage on a lent GPU machine, sized for its device time (15 minutes a session, the
# start included; 10 minutes a command), in three steps (models/README.md, "The next stage"):
#
#   models/gpu-stage.sh prepare              here: the training decks and backgrounds into an
#                                            ignored shared/ of the checkout, which travels
#   models/gpu-stage.sh device [WAIT_S]      there (the device tool's command): start the stage
#                                            once, wait on it up to WAIT_S seconds (default 540),
#                                            and send back what it has made so far ($OUT)
#   models/gpu-stage.sh finish FILES OUT SEED  here: export the nets sent back (FILES) into OUT,
#                                            fit the acceptance rule, and pair them with the
#                                            committed model on fresh scenes of the training
#                                            decks (seeds SEED, SEED+1, SEED+2)
#
# A second `device` call on the same warm machine starts nothing: it waits on the same stage.
# The stage (environment, with their defaults): STAGE_SEED=23, STAGE_SCENES=12000 plain scenes,
# STAGE_LENS=3000 through a lens, STAGE_BACKS=1000 rich in face-down cards, STAGE_MINUTES=6 of
# training, STAGE_WORKERS=15, STAGE_DEVICE=cuda, STAGE_EXTRA (more `companion train` options,
# e.g. "--localizer-width 2" or "--lr-scale 0.5"), STAGE_WORK=/tmp/gpu-stage (its folder).
set -u
called_from=$PWD
cd "$(dirname "$0")/.."
here=$PWD
python=${PYTHON:-python3}

usage() {
	sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
	exit 2
}

train_decks() { # the decks a stage trains on: training.TRAIN_DECKS, never the held-out deck
	"$python" -c 'from companion.training import TRAIN_DECKS; print(*TRAIN_DECKS)'
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

device() {
	local wait_s=${1:-540}
	local work=${STAGE_WORK:-/tmp/gpu-stage}
	local sent=${OUT:-$work/sent}
	mkdir -p "$work" "$sent"
	# the decks travel in the checkout's shared/; else ../shared or $COMPANION_SHARED as usual
	[ -d shared/decks ] && export COMPANION_SHARED=$here/shared
	export PYTHONUNBUFFERED=1
	if [ ! -f "$work/pid" ]; then
		# shellcheck disable=SC2086  # STAGE_EXTRA is a list of options
		setsid nohup "$python" -m companion.cli train --resume models/ --out "$work/out" \
			--scenes "${STAGE_SCENES:-12000}" --lens-scenes "${STAGE_LENS:-3000}" \
			--back-scenes "${STAGE_BACKS:-1000}" --seed "${STAGE_SEED:-23}" \
			--minutes "${STAGE_MINUTES:-6}" --cache "$work/cache" --workers "${STAGE_WORKERS:-15}" \
			--device "${STAGE_DEVICE:-cuda}" ${STAGE_EXTRA:-} >"$work/stage.log" 2>&1 </dev/null &
		echo $! >"$work/pid"
		# what the stage holds, every 30 s while it runs: GPU memory and load, host memory
		setsid nohup bash -c "while [ -e /proc/$(cat "$work/pid") ]; do { date +%T; nvidia-smi --query-gpu=memory.used,utilization.gpu \
			--format=csv,noheader 2>/dev/null; free -g | sed -n 2p; } >>'$work/usage.log'; sleep 30; done" \
			>/dev/null 2>&1 </dev/null &
		echo "stage started (pid $(cat "$work/pid")), log in $work/stage.log"
	fi
	local pid end=$((SECONDS + wait_s))
	pid=$(cat "$work/pid")
	while alive "$pid" && [ "$SECONDS" -lt "$end" ]; do sleep 2; done
	cp "$work/stage.log" "$sent/" 2>/dev/null
	cp "$work/usage.log" "$sent/" 2>/dev/null
	if alive "$pid"; then
		# the last whole epoch's weights, should no later call come to collect the stage
		for net in localizer classifier; do
			cp "$work/out/resume-work/$net.ckpt" "$sent/$net.partial.pt" 2>/dev/null
		done
		echo "stage still running after ${wait_s}s: call 'models/gpu-stage.sh device' again to wait on"
		tail -n 3 "$work/stage.log"
		return 3
	fi
	if [ -f "$work/out/recognizer.json" ] && [ -f "$work/out/checkpoints/classifier.pt" ]; then
		cp "$work/out/recognizer.json" "$work/out/checkpoints/localizer.pt" \
			"$work/out/checkpoints/classifier.pt" "$sent/"
		echo "stage finished: recognizer.json and both checkpoints sent back"
		tail -n 3 "$work/stage.log"
		return 0
	fi
	echo "the stage ended without a model; the end of its log:"
	tail -n 20 "$work/stage.log"
	return 1
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
		cp models/recognizer.json "$from/"
		cp "$files/localizer.partial.pt" "$from/checkpoints/localizer.pt"
		cp "$files/classifier.partial.pt" "$from/checkpoints/classifier.pt"
	else
		echo "$files holds neither recognizer.json nor partial checkpoints"
		exit 2
	fi
	"$python" -m companion.cli train --export-from "$from" --out "$out"
	"$python" -m companion.cli fit-acceptance --model "$out/recognizer.json" \
		--seed "${FINISH_RULE_SEED:-300}" --n "${FINISH_RULE_N:-1500}" --trees "${FINISH_TREES:-100}" \
		--above "${FINISH_ABOVE:-0.775}"
	local s=$seed
	for deck in $(train_decks); do
		"$python" -m companion.cli eval --deck "$deck" --seed "$s" --n "${FINISH_EVAL_N:-600}" \
			--workers 2 --model "$out/recognizer.json" --against models --json >"$out/eval-$deck-$s.json"
		s=$((s + 1))
	done
	"$python" - "$out" <<'EOF'
import json, pathlib, sys

runs = sorted(pathlib.Path(sys.argv[1]).glob("eval-*.json"))
rows = [json.loads(p.read_text()) for p in runs]
print("| deck, seed | cards | stage: recall, false cards / image | committed | recall difference (95 % interval) |")
print("|---|---|---|---|---|")
found = need = fp = other_found = other_fp = images = 0
for r in rows:
    a = r["against"]
    low, high = a["intervals"]["recall"] or (float("nan"), float("nan"))
    print(f"| {r['deck']} {r['seed']} | {r['labels']:,} | {100 * r['recall']:.2f} %, "
          f"{r['false_positives_per_image']:.3f} | {100 * a['recall']:.2f} %, "
          f"{a['false_positives_per_image']:.3f} | {100 * a['difference']['recall']:+.2f} points "
          f"({100 * low:+.2f} to {100 * high:+.2f}) |")
    need += r["labels"]; found += round(r["recall"] * r["labels"])
    other_found += round(a["recall"] * r["labels"]); images += r["images"]
    fp += r["false_positives"]; other_fp += a["false_positives"]
if need:
    print(f"| pooled | {need:,} | {100 * found / need:.2f} %, {fp / images:.3f} | "
          f"{100 * other_found / need:.2f} %, {other_fp / images:.3f} | |")
EOF
}

case "${1:-}" in
prepare) prepare ;;
device) shift; device "$@" ;;
finish) shift; finish "$@" ;;
*) usage ;;
esac
