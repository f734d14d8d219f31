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
#   lab.sh client CMD…   run CMD as a client of the cluster: in a namespace
#                        of its own on the lab's switch (lab-client, flat .253,
#                        routed .252), which has no route but the lab's: a
#                        Service or pod address that nothing answers cannot
#                        leave the machine from there
#
# Each node has its own network namespace (/run/netns/<node>) with one
# address, on a bridge in a namespace of the lab's own (lab-switch), and its
# own data dir, containerd, cgroup root, netns dir and pod log dir under
# $LAB_DIR/<node>. The host is on the bridge too (link skifflab0, the
# subnet's .254), through which the API server is reached. The nodes have
# no default route, and the switch none either: nothing the lab sends can
# leave it, and the host forwards none of it. The lab's subnets must be
# ones no interface of the machine uses.
#
# With LAB_ROUTED=1 every node has a subnet of its own instead (lab-server
# 10.213.0.1/24, lab-nodeN 10.213.N.1/24) and a route to the others through
# the switch, which routes between them (its .254 on each): the nodes share
# no L2 segment (for --pod-network=vxlan). The host is then .253 of the
# server's subnet.
#
# Environment: LAB_DIR (default /var/lib/skiff-lab), LAB_NET (first three
# octets of the lab's /24, default 10.213.0; routed: its first two octets
# are the lab's /16), SKIFF (the binary, default bin/skiff, built if
# missing), LAB_IMAGES (a directory of image tarballs every node imports),
# LAB_SERVER_ARGS / LAB_AGENT_ARGS (extra flags), LAB_ROUTED.
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
LAB_DIR=${LAB_DIR:-/var/lib/skiff-lab}
# A lab that is up keeps its layout for the other commands.
if [[ ${1:-} != up && -f $LAB_DIR/layout ]]; then . "$LAB_DIR/layout"; fi
LAB_NET=${LAB_NET:-10.213.0}
SKIFF=${SKIFF:-$REPO/bin/skiff}
LAB_ROUTED=${LAB_ROUTED:-}
HOST_LINK=skifflab0
SWITCH=lab-switch
CLIENT=lab-client
SERVER_IP=$LAB_NET.1
API=https://$SERVER_IP:6443

log() { echo "lab: $*" >&2; }
die() { log "$*"; exit 1; }

# nodes lists the lab's nodes, from their network namespaces.
nodes() { ip netns list | awk '$1 ~ /^lab-(server|node[0-9]+)$/ {print $1}' | sort -V; }

# node_index NAME: lab-server is 0, lab-nodeN is N.
node_index() {
	case $1 in
	lab-server) echo 0 ;;
	lab-node*) echo "${1#lab-node}" ;;
	*) die "no lab node $1" ;;
	esac
}

# node_subnet NAME: the first three octets of the node's /24.
node_subnet() {
	if [[ -n $LAB_ROUTED ]]; then echo "${LAB_NET%.*}.$((${LAB_NET##*.} + $(node_index "$1")))"; else echo "$LAB_NET"; fi
}

# node_ip NAME: flat, lab-server is .1 and lab-nodeN .(N+1); routed, .1
# of the node's own subnet.
node_ip() {
	if [[ -n $LAB_ROUTED ]]; then echo "$(node_subnet "$1").1"; else echo "$LAB_NET.$(($(node_index "$1") + 1))"; fi
}

# port NAME is the switch's end of the node's veth (at most 15 chars).
port() { echo "v${1#lab-}"; }

# sw CMD…: run an ip command in the switch's namespace.
sw() { ip -n "$SWITCH" "$@"; }

# check_subnets N: the subnets of N agents and the server are free.
check_subnets() {
	local name subnet
	for name in lab-server $(seq -f 'lab-node%g' "$1"); do
		subnet=$(node_subnet "$name")
		if ip -4 -o addr show | grep -v " $HOST_LINK " | grep -q " inet $subnet\."; then
			die "$subnet.0/24 is in use on this machine; pick another LAB_NET"
		fi
	done
}

# make_switch: the lab's namespace with bridge br0 (no netfilter on what it
# bridges: it stands for the wire between machines), the host on it.
make_switch() {
	ip netns add "$SWITCH"
	sw link set lo up
	sw link add br0 type bridge
	sw link set br0 up
	nsenter --net="/run/netns/$SWITCH" sh -c 'f=/proc/sys/net/bridge/bridge-nf-call-iptables; [ ! -e $f ] || echo 0 >$f'
	ip link add "$HOST_LINK" type veth peer name host netns "$SWITCH"
	sw link set host master br0 up
	ip link set "$HOST_LINK" up
	if [[ -n $LAB_ROUTED ]]; then
		nsenter --net="/run/netns/$SWITCH" sh -c 'echo 1 >/proc/sys/net/ipv4/ip_forward'
		ip addr add "$LAB_NET.253/24" dev "$HOST_LINK"
	else
		ip addr add "$LAB_NET.254/24" dev "$HOST_LINK"
	fi
}

# make_netns NAME: the node's namespace, with eth0 on the switch and no
# route but its own subnet's (routed: and the lab's through the switch).
make_netns() {
	local name=$1 ip link
	ip=$(node_ip "$name") link=$(port "$name")
	ip netns add "$name"
	sw link add "$link" type veth peer name eth0 netns "$name"
	sw link set "$link" master br0 up
	ip -n "$name" addr add "$ip/24" dev eth0
	ip -n "$name" link set lo up
	ip -n "$name" link set eth0 up
	if [[ -n $LAB_ROUTED ]]; then
		sw addr add "$(node_subnet "$name").254/24" dev br0
		ip -n "$name" route add "${LAB_NET%.*}.0.0/16" via "$(node_subnet "$name").254"
	fi
}

# make_client: the client's namespace, on the server's subnet.
make_client() {
	local ip=$LAB_NET.253
	[[ -z $LAB_ROUTED ]] || ip=$LAB_NET.252
	ip netns add "$CLIENT"
	sw link add vclient type veth peer name eth0 netns "$CLIENT"
	sw link set vclient master br0 up
	ip -n "$CLIENT" addr add "$ip/24" dev eth0
	ip -n "$CLIENT" link set lo up
	ip -n "$CLIENT" link set eth0 up
	if [[ -n $LAB_ROUTED ]]; then ip -n "$CLIENT" route add "${LAB_NET%.*}.0.0/16" via "$LAB_NET.254"; fi
}

client() {
	[[ -e /run/netns/$SWITCH ]] || die "no lab is up"
	[[ -e /run/netns/$CLIENT ]] || make_client
	exec nsenter --net="/run/netns/$CLIENT" "$@"
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
	[[ ! -e /run/netns/$SWITCH ]] || die "a lab is already up (lab.sh down first)"
	check_subnets "$n"
	[[ -x $SKIFF ]] || make -C "$REPO" build >&2
	rm -rf "$LAB_DIR" && mkdir -p "$LAB_DIR"
	printf 'LAB_NET=%q\nLAB_ROUTED=%q\n' "$LAB_NET" "$LAB_ROUTED" >"$LAB_DIR/layout"
	make_switch
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
		# A cgroup may go while it is read (its last process exiting).
		pids=$(lab_cgroups | sed 's|$|/cgroup.procs|' | { xargs -r cat 2>/dev/null || true; } | sort -u)
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
	# The host's link goes now; the namespaces (and the links in them) are
	# freed by the kernel in the background once nothing holds them.
	ip link del "$HOST_LINK" 2>/dev/null || true
	for m in $(nodes); do ip netns del "$m"; done
	if [[ -e /run/netns/$CLIENT ]]; then ip netns del "$CLIENT"; fi
	if [[ -e /run/netns/$SWITCH ]]; then ip netns del "$SWITCH"; fi
	lab_cgroups | xargs -r rmdir 2>/dev/null || true
	rm -rf "$LAB_DIR"
	log "down"
}

status() {
	local n pid
	for n in $(nodes); do
		pid=$(cat "$LAB_DIR/$n/pid" 2>/dev/null || true)
		if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
			echo "$n $(node_ip "$n") link $(sw -o link show "$(port "$n")" | grep -q ',UP' && echo up || echo down), skiff pid $pid, $(pgrep -fc "$LAB_DIR/$n/") processes"
		else
			echo "$n $(node_ip "$n") skiff not running"
		fi
	done
}

partition() { sw link set "$(port "${1:?node}")" down; }
heal() { sw link set "$(port "${1:?node}")" up; }

[[ $(id -u) == 0 ]] || die "run as root"
case ${1:-} in
up) up "${2:-}" ;;
down) down ;;
status) status ;;
partition) partition "${2:-}" ;;
heal) heal "${2:-}" ;;
client) shift && client "$@" ;;
*) die "usage: lab.sh up N | down | status | partition NODE | heal NODE | client CMD…" ;;
esac
