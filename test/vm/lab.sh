#!/usr/bin/env bash
# lab.sh — a skiff cluster of several nodes on this one machine.
#
#   lab.sh up N          a server (node lab-server) and N agents (lab-node1 …
#                        lab-nodeN) joined with the server's token; waits until
#                        every node is Ready; last line KUBECONFIG=<path>
#   lab.sh down          stop everything and remove all the lab made
#   lab.sh status        the nodes, their addresses and processes
#   lab.sh partition NODE / heal NODE
#                        cut / restore one node's link to the others
#
# Each node has its own network namespace (/run/netns/<node>) with one
# address on the lab bridge, its own data dir, containerd, cgroup root, netns
# dir and pod log dir under $LAB_DIR/<node>. The host has the bridge's last
# address, through which the API server is reached. The nodes have no default
# route: nothing they send can leave the lab. The lab subnet must be one no
# interface of the machine uses.
#
# Environment: LAB_DIR (default /var/lib/skiff-lab), LAB_NET (first three
# octets of the lab's /24, default 10.213.0), SKIFF (the binary, default
# bin/skiff, built if missing), LAB_IMAGES (a directory of image tarballs
# every node imports), LAB_SERVER_ARGS / LAB_AGENT_ARGS (extra flags).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
LAB_DIR=${LAB_DIR:-/var/lib/skiff-lab}
LAB_NET=${LAB_NET:-10.213.0}
SKIFF=${SKIFF:-$REPO/bin/skiff}
BRIDGE=skifflab0
HOST_IP=$LAB_NET.254
SERVER_IP=$LAB_NET.1
API=https://$SERVER_IP:6443

log() { echo "lab: $*" >&2; }
die() { log "$*"; exit 1; }

# nodes lists the lab's nodes, from their network namespaces.
nodes() { ip netns list | awk '$1 ~ /^lab-(server|node[0-9]+)$/ {print $1}' | sort -V; }

# node_ip NAME: lab-server is .1, lab-nodeN is .(N+1).
node_ip() {
	case $1 in
	lab-server) echo "$SERVER_IP" ;;
	lab-node*) echo "$LAB_NET.$((${1#lab-node} + 1))" ;;
	*) die "no lab node $1" ;;
	esac
}

# host_link NAME is the host's end of the node's veth (at most 15 chars).
host_link() { echo "v${1#lab-}"; }

check_subnet() {
	if ip -4 -o addr show | grep -v " $BRIDGE " | grep -q " inet $LAB_NET\."; then
		die "$LAB_NET.0/24 is in use on this machine; pick another LAB_NET"
	fi
}

make_bridge() {
	ip link show "$BRIDGE" >/dev/null 2>&1 && return
	ip link add "$BRIDGE" type bridge
	ip addr add "$HOST_IP/24" dev "$BRIDGE"
	ip link set "$BRIDGE" up
}

# make_netns NAME: the node's namespace, with eth0 on the lab bridge and no
# route but its own subnet's.
make_netns() {
	local name=$1 ip link
	ip=$(node_ip "$name") link=$(host_link "$name")
	ip netns add "$name"
	ip link add "$link" type veth peer name eth0 netns "$name"
	ip link set "$link" master "$BRIDGE" up
	ip -n "$name" addr add "$ip/24" dev eth0
	ip -n "$name" link set lo up
	ip -n "$name" link set eth0 up
}

# common_flags NAME: where the node keeps its state.
common_flags() {
	local d=$LAB_DIR/$1
	echo --data-dir "$d" --node-name "$1" --node-ip "$(node_ip "$1")" --netns-dir "$d/netns" \
		--pod-log-dir "$d/pods" --cgroup-root "/skiff-$1"
}

# start NAME ARGS…: run skiff in the node's namespace, in the background.
start() {
	local name=$1 d=$LAB_DIR/$1
	shift
	mkdir -p "$d/agent/images"
	if [[ -n ${LAB_IMAGES:-} ]]; then cp "$LAB_IMAGES"/*.tar "$d/agent/images/" 2>/dev/null || true; fi
	setsid nsenter --net="/run/netns/$name" "$SKIFF" "$@" </dev/null >"$d/skiff.log" 2>&1 &
	echo $! >"$d/pid"
}

start_server() {
	# shellcheck disable=SC2046,SC2086
	start lab-server server $(common_flags lab-server) --bind-address "$SERVER_IP" \
		--write-kubeconfig "$LAB_DIR/admin.kubeconfig" ${LAB_SERVER_ARGS:-}
	local token=$LAB_DIR/lab-server/server/token
	for _ in $(seq 300); do [[ -s $token && -s $LAB_DIR/admin.kubeconfig ]] && return; sleep 0.1; done
	die "the server wrote no token in 30 s: $(tail -5 "$LAB_DIR/lab-server/skiff.log")"
}

start_agent() {
	local name=$1
	# shellcheck disable=SC2046,SC2086
	start "$name" agent $(common_flags "$name") --server "$API" --token "$(cat "$LAB_DIR/lab-server/server/token")" \
		--kubeconfig "$LAB_DIR/$name/agent.kubeconfig" ${LAB_AGENT_ARGS:-}
}

# api PATH: GET from the API server as the admin.
api() {
	local k=$LAB_DIR/admin.kubeconfig
	curl -sf --max-time 5 --cacert <(kc_field "$k" certificate-authority-data) \
		--cert <(kc_field "$k" client-certificate-data) --key <(kc_field "$k" client-key-data) "$API$1"
}

kc_field() { awk -v f="$2:" '$1 == f {print $2}' "$1" | base64 -d; }

# wait_ready N: until N nodes are Ready.
wait_ready() {
	local want=$1 ready=0
	for _ in $(seq 600); do
		ready=$(api /api/v1/nodes 2>/dev/null | jq '[.items[] | select(.status.conditions[]? |
			.type == "Ready" and .status == "True")] | length' 2>/dev/null || echo 0)
		[[ $ready == "$want" ]] && return
		sleep 0.2
	done
	die "$ready of $want nodes Ready after 120 s; see $LAB_DIR/*/skiff.log"
}

up() {
	local n=${1:?usage: lab.sh up N}
	[[ $n =~ ^[0-9]+$ && $n -le 250 ]] || die "N must be a number of agents, 0–250"
	[[ -z $(nodes) ]] || die "a lab is already up (lab.sh down first)"
	check_subnet
	[[ -x $SKIFF ]] || make -C "$REPO" build >&2
	rm -rf "$LAB_DIR" && mkdir -p "$LAB_DIR"
	make_bridge
	make_netns lab-server
	start_server
	for i in $(seq "$n"); do
		make_netns "lab-node$i"
		start_agent "lab-node$i"
	done
	wait_ready $((n + 1))
	log "$((n + 1)) nodes Ready"
	echo "KUBECONFIG=$LAB_DIR/admin.kubeconfig"
}

# stop_processes: the skiff processes first (they supervise containerd),
# then every containerd and shim of the lab, then the pods' processes (in
# the lab's cgroups).
stop_processes() {
	local pid pids
	for pid in $(cat "$LAB_DIR"/*/pid 2>/dev/null); do kill -TERM "$pid" 2>/dev/null || true; done
	for _ in $(seq 100); do pgrep -f "$LAB_DIR/" >/dev/null || break; sleep 0.1; done
	pkill -KILL -f "$LAB_DIR/" 2>/dev/null || true
	for _ in $(seq 3); do
		pids=$(lab_cgroups | sed 's|$|/cgroup.procs|' | xargs -r cat 2>/dev/null | sort -u)
		[[ -z $pids ]] && break
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
		sleep 0.2
	done
}

# lab_cgroups lists the lab's cgroups, deepest first, in every hierarchy.
lab_cgroups() { find /sys/fs/cgroup -maxdepth 2 -name 'skiff-lab-*' -type d -exec find {} -depth -type d \; 2>/dev/null; }

down() {
	stop_processes
	local m
	for m in $(findmnt -rn -o TARGET | grep "^$LAB_DIR/" | sort -r); do umount -l "$m" 2>/dev/null || true; done
	for m in $(nodes); do ip netns del "$m"; done
	ip link del "$BRIDGE" 2>/dev/null || true
	lab_cgroups | xargs -r rmdir 2>/dev/null || true
	rm -rf "$LAB_DIR"
	log "down"
}

status() {
	local n pid
	for n in $(nodes); do
		pid=$(cat "$LAB_DIR/$n/pid" 2>/dev/null || true)
		if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
			echo "$n $(node_ip "$n") link $(cat "/sys/class/net/$(host_link "$n")/operstate") skiff pid $pid, $(pgrep -fc "$LAB_DIR/$n/") processes"
		else
			echo "$n $(node_ip "$n") skiff not running"
		fi
	done
}

partition() { ip link set "$(host_link "${1:?node}")" down; }
heal() { ip link set "$(host_link "${1:?node}")" up; }

[[ $(id -u) == 0 ]] || die "run as root"
case ${1:-} in
up) up "${2:-}" ;;
down) down ;;
status) status ;;
partition) partition "${2:-}" ;;
heal) heal "${2:-}" ;;
*) die "usage: lab.sh up N | down | status | partition NODE | heal NODE" ;;
esac
