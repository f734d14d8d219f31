#!/usr/bin/env bash
# lab.sh — a skiff cluster of several nodes on this one machine.
#
#   lab.sh up N          a server (node lab-server) and N agents (lab-node1 …
#                        lab-nodeN) joined with the server's token; waits until
#                        every node is Ready; last line KUBECONFIG=<path>.
#                        With LAB_SERVERS=K (K > 1), K servers: lab-server
#                        with --cluster-init, lab-server2 … lab-serverK
#                        joined to it with its server token
#   lab.sh down          stop everything and remove all the lab made
#   lab.sh status        the nodes, their addresses and processes
#   lab.sh partition NODE / heal NODE
#                        cut / restore one node's link to the others
#   lab.sh kill NODE / restart NODE
#                        SIGKILL the node's skiff / start it again as before
#   lab.sh fill NODE / unfill NODE
#                        fill up / free again the file system of a node in
#                        LAB_SMALL_DISK
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
# Servers after the first are at .(253 - K) (flat) or on subnet 200 + K
# (routed), their kubeconfigs at $LAB_DIR/lab-serverK/admin.kubeconfig.
#
# Environment: LAB_DIR (default /var/lib/skiff-lab), LAB_NET (first three
# octets of the lab's /24, default 10.213.0; routed: its first two octets
# are the lab's /16), SKIFF (the binary, default bin/skiff, built if
# missing), LAB_IMAGES (a directory of image tarballs every node imports),
# LAB_SERVER_ARGS / LAB_AGENT_ARGS (extra flags), LAB_ROUTED, LAB_SMALL_DISK
# (nodes whose data dir is a file system of its own, LAB_SMALL_DISK_MB in
# size, default 512: an ext4 image on a loop device, for a full disk).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
LAB_DIR=${LAB_DIR:-/var/lib/skiff-lab}
# A lab that is up keeps its layout for the other commands.
if [[ ${1:-} != up && -f $LAB_DIR/layout ]]; then . "$LAB_DIR/layout"; fi
LAB_NET=${LAB_NET:-10.213.0}
SKIFF=${SKIFF:-$REPO/bin/skiff}
LAB_ROUTED=${LAB_ROUTED:-}
LAB_SERVERS=${LAB_SERVERS:-1}
HOST_LINK=skifflab0
SWITCH=lab-switch
CLIENT=lab-client
SERVER_IP=$LAB_NET.1
API=https://$SERVER_IP:6443

log() { echo "lab: $*" >&2; }
die() { log "$*"; exit 1; }

# nodes lists the lab's nodes, from their network namespaces.
nodes() { ip netns list | awk '$1 ~ /^lab-(server[0-9]*|node[0-9]+)$/ {print $1}' | sort -V; }

# servers lists the names of the lab's servers.
servers() { echo lab-server; seq -f 'lab-server%g' 2 "$LAB_SERVERS"; }

# node_index NAME: lab-server is 0, lab-nodeN is N, lab-serverK 200 + K.
node_index() {
	case $1 in
	lab-server) echo 0 ;;
	lab-server*) echo $((200 + ${1#lab-server})) ;;
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
	local i
	i=$(node_index "$1")
	if [[ -n $LAB_ROUTED ]]; then
		echo "$(node_subnet "$1").1"
	elif ((i > 200)); then
		echo "$LAB_NET.$((253 - i + 200))"
	else
		echo "$LAB_NET.$((i + 1))"
	fi
}

# port NAME is the switch's end of the node's veth (at most 15 chars).
port() { echo "v${1#lab-}"; }

# sw CMD…: run an ip command in the switch's namespace.
sw() { ip -n "$SWITCH" "$@"; }

# check_subnets N: the subnets of N agents and the server are free.
check_subnets() {
	local name subnet
	for name in $(servers) $(seq -f 'lab-node%g' "$1"); do
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

# small_disk NAME: for a node in LAB_SMALL_DISK, its data dir on a file
# system of its own (no blocks reserved for root: skiff runs as root), on a
# loop device that goes with the mount.
small_disk() {
	local d=$LAB_DIR/$1 img=$LAB_DIR/$1.img
	[[ " ${LAB_SMALL_DISK:-} " == *" $1 "* ]] || return 0
	mkdir -p "$d"
	truncate -s "${LAB_SMALL_DISK_MB:-512}M" "$img"
	mkfs.ext4 -q -F -m 0 "$img"
	mount -o loop "$img" "$d"
}

# fill NAME: take every free block of the node's small disk.
fill() {
	local d=$LAB_DIR/${1:?node}
	mountpoint -q "$d" || die "$1 has no disk of its own (LAB_SMALL_DISK)"
	fallocate -l "$(df --output=avail -B1 "$d" | tail -1)" "$d/fill" 2>/dev/null || true
	dd if=/dev/zero of="$d/fill-rest" bs=4k status=none 2>/dev/null || true
}

unfill() { rm -f "$LAB_DIR/${1:?node}/fill" "$LAB_DIR/$1/fill-rest"; }

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
	printf '%s\n' "$@" >"$d/args"
	setsid nsenter --net="/run/netns/$name" "$SKIFF" "$@" </dev/null >>"$d/skiff.log" 2>&1 &
	echo $! >"$d/pid"
}

# kill9 NAME: end the node's skiff with SIGKILL, as a crash would (its
# containerd and pods stay).
kill9() {
	local pid
	pid=$(cat "$LAB_DIR/${1:?node}/pid")
	kill -KILL "$pid" 2>/dev/null || true
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
}

# restart NAME: start the node's skiff again with the arguments it had.
restart() {
	local name=${1:?node} args
	mapfile -t args <"$LAB_DIR/$name/args"
	start "$name" "${args[@]}"
}

# start_server NAME: the first server (with --cluster-init when there are
# several), or one that joins it.
start_server() {
	local name=$1 kubeconfig=$LAB_DIR/admin.kubeconfig join=()
	if [[ $name != lab-server ]]; then
		kubeconfig=$LAB_DIR/$name/admin.kubeconfig
		join=(--server "$API" --token "$(cat "$LAB_DIR/lab-server/server/server-token")")
	elif ((LAB_SERVERS > 1)); then
		join=(--cluster-init)
	fi
	# shellcheck disable=SC2046,SC2086
	start "$name" server $(common_flags "$name") --bind-address "$(node_ip "$name")" \
		--write-kubeconfig "$kubeconfig" "${join[@]}" ${LAB_SERVER_ARGS:-}
	local token=$LAB_DIR/$name/server/server-token
	for _ in $(seq 600); do [[ -s $token && -s $kubeconfig ]] && return; sleep 0.1; done
	die "$name wrote no token in 60 s: $(tail -5 "$LAB_DIR/$name/skiff.log")"
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
	local n=${1:?usage: lab.sh up N} name
	[[ $n =~ ^[0-9]+$ && $n -le 250 ]] || die "N must be a number of agents, 0–250"
	[[ $LAB_SERVERS =~ ^[0-9]+$ && $LAB_SERVERS -ge 1 && $((n + LAB_SERVERS)) -le 251 ]] || die "LAB_SERVERS must be 1 or more, with N, 251 at most"
	[[ ! -e /run/netns/$SWITCH ]] || die "a lab is already up (lab.sh down first)"
	check_subnets "$n"
	[[ -x $SKIFF ]] || make -C "$REPO" build >&2
	rm -rf "$LAB_DIR" && mkdir -p "$LAB_DIR"
	printf 'LAB_NET=%q\nLAB_ROUTED=%q\nLAB_SERVERS=%q\n' "$LAB_NET" "$LAB_ROUTED" "$LAB_SERVERS" >"$LAB_DIR/layout"
	make_switch
	for name in $(servers); do
		make_netns "$name"
		small_disk "$name"
		start_server "$name"
	done
	for i in $(seq "$n"); do
		make_netns "lab-node$i"
		small_disk "lab-node$i"
		start_agent "lab-node$i"
	done
	wait_ready $((n + LAB_SERVERS))
	log "$((n + LAB_SERVERS)) nodes Ready"
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

# The first `ip netns add` makes /run/netns a mount point of its own, and
# iproute2 never takes it down. Once no namespace is left in it, it goes
# (the next `ip netns add` makes it again); a namespace another user adds
# meanwhile is a mount inside it, which makes umount refuse.
release_netns_dir() {
	if mountpoint -q /run/netns && [[ -z $(ls -A /run/netns) ]]; then umount /run/netns 2>/dev/null || true; fi
}

down() {
	stop_processes
	local m
	for m in $(findmnt -rn -o TARGET | grep "^$LAB_DIR/" | sort -r); do umount -l "$m" 2>/dev/null || true; done
	# A small disk's loop device goes once its file system is released.
	for _ in $(seq 50); do losetup -a | grep -q "$LAB_DIR/" || break; sleep 0.1; done
	# The host's link goes now; the namespaces (and the links in them) are
	# freed by the kernel in the background once nothing holds them.
	ip link del "$HOST_LINK" 2>/dev/null || true
	for m in $(nodes); do ip netns del "$m"; done
	if [[ -e /run/netns/$CLIENT ]]; then ip netns del "$CLIENT"; fi
	if [[ -e /run/netns/$SWITCH ]]; then ip netns del "$SWITCH"; fi
	release_netns_dir
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
kill) kill9 "${2:-}" ;;
fill) fill "${2:-}" ;;
unfill) unfill "${2:-}" ;;
restart) restart "${2:-}" ;;
client) shift && client "$@" ;;
*) die "usage: lab.sh up N | down | status | partition NODE | heal NODE | kill NODE | restart NODE | fill NODE | unfill NODE | client CMD…" ;;
esac
