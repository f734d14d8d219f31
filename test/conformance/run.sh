#!/usr/bin/env bash
# run.sh — upstream's conformance suite against a skiff lab cluster.
#
#   test/conformance/run.sh            (as root; `make conformance` runs it)
#
# Starts a lab (test/vm/lab.sh up $NODES: a server and $NODES agents, each
# importing the suite's images, built by test/images/conformance, and
# pulling them, for the specs that pull Always, from a registry of the same
# images on the host's side of the lab's bridge: test/images/registry), runs the
# [Conformance] specs that match FOCUS and not SKIP with the ginkgo CLI —
# first the parallel ones on $PROCS processes, then the [Serial] ones on one
# — from the lab's client namespace (nothing it sends can leave the lab),
# and writes under $OUT: junit-parallel.xml, junit-serial.xml, the suite's
# output (parallel.log, serial.log), the nodes' logs (nodes/) and
# summary.md (per SIG: passed, failed, not served yet; each failure's first
# line). The lab is torn down after, whatever happened.
#
# Environment:
#   FOCUS, SKIP   regular expressions on the specs' names (default all / none)
#   FOCUS_FILE    a file of such expressions, one a line (# comments): the
#                 specs that match any of them (with FOCUS, either)
#   NODES         agents besides the server (default 2: two schedulable
#                 nodes besides the server's)
#   PROCS         ginkgo processes for the parallel pass (default 6)
#   TIMEOUT       time box of each pass, a Go duration (default 90m)
#   SERIAL        0 skips the serial pass (default 1)
#   PARALLEL      0 skips the parallel pass (default 1)
#   OUT           output directory (default bin/conformance/report)
# Exit status: 0 only if every spec that ran passed.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
FOCUS=${FOCUS:-}
if [[ -n ${FOCUS_FILE:-} ]]; then
	FOCUS=$( (
		[[ -z $FOCUS ]] || echo "$FOCUS"
		grep -v '^[[:space:]]*\(#\|$\)' "$FOCUS_FILE"
	) | paste -sd '|')
fi
SKIP=${SKIP:-}
NODES=${NODES:-2}
PROCS=${PROCS:-6}
TIMEOUT=${TIMEOUT:-90m}
SERIAL=${SERIAL:-1}
PARALLEL=${PARALLEL:-1}
OUT=${OUT:-$REPO/bin/conformance/report}
BIN=$REPO/bin
LAB=$REPO/test/vm/lab.sh
export LAB_DIR=${LAB_DIR:-/var/lib/skiff-lab}

log() { echo "conformance: $*" >&2; }

[[ $(id -u) == 0 ]] || { log "run as root"; exit 1; }

make -C "$REPO" build kubectl conformance-build >&2
rm -rf "$OUT" && mkdir -p "$OUT/images"
(cd "$REPO" && go run ./test/images/conformance -out "$BIN/conformance/images" &&
	go build -o "$BIN/conformance/registry" ./test/images/registry)
ln -f "$BIN/conformance/images/"*.tar "$OUT/images/" 2>/dev/null || cp "$BIN/conformance/images/"*.tar "$OUT/images/"

cleanup() {
	local d
	for d in "$LAB_DIR"/lab-*/; do
		[[ -f $d/skiff.log ]] && mkdir -p "$OUT/nodes" && cp "$d/skiff.log" "$OUT/nodes/$(basename "$d").log"
	done
	rm -rf "$OUT/images"
	if [[ -n ${registry_pid:-} ]]; then kill "$registry_pid" 2>/dev/null || true; fi
	"$LAB" down || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The specs that pull with imagePullPolicy Always pull from a registry of
# the same images, every node's mirror of registry.k8s.io, on the host's
# side of the lab's bridge (up with the lab).
export LAB_NET=${LAB_NET:-10.213.0}
registry=$LAB_NET.254:5000
mirror="--registry-mirror registry.k8s.io=http://$registry"
LAB_AGENT_ARGS="${LAB_AGENT_ARGS:-} $mirror" LAB_SERVER_ARGS="${LAB_SERVER_ARGS:-} $mirror" \
	LAB_IMAGES=$OUT/images "$LAB" up "$NODES"
kubeconfig=$LAB_DIR/admin.kubeconfig
"$BIN/conformance/registry" -listen "$registry" -images "$BIN/conformance/images/conformance-images.tar" \
	>"$OUT/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 240); do grep -q '^ready$' "$OUT/registry.log" && break; sleep 0.5; done
grep -q '^ready$' "$OUT/registry.log" || { log "the registry did not start: $(tail -3 "$OUT/registry.log")"; exit 1; }

# pass NAME LABELS PROCS: one ginkgo run of the specs with those labels.
pass() {
	local name=$1 labels=$2 procs=$3 args=()
	[[ -z $FOCUS ]] || args+=(--focus "$FOCUS")
	[[ -z $SKIP ]] || args+=(--skip "$SKIP")
	log "$name pass: $procs processes, specs labelled $labels"
	"$LAB" client "$BIN/conformance/ginkgo" --procs "$procs" --label-filter "$labels" "${args[@]}" \
		--timeout "$TIMEOUT" --no-color --silence-skips --output-dir "$OUT" --junit-report "junit-$name.xml" \
		"$BIN/conformance/e2e.test" -- \
		--kubeconfig "$kubeconfig" --provider skeleton --kubectl-path "$BIN/kubectl" \
		--minStartupPods 0 >"$OUT/$name.log" 2>&1
}

status=0
if [[ $PARALLEL != 0 ]]; then pass parallel 'Conformance && !Serial' "$PROCS" || status=1; fi
if [[ $SERIAL != 0 ]]; then pass serial 'Conformance && Serial' 1 || status=1; fi
(cd "$REPO/test/conformance" && go run ./summary "$OUT"/junit-*.xml) >"$OUT/summary.md" || status=1
cat "$OUT/summary.md"
log "reports in $OUT"
exit "$status"
