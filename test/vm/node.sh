#!/usr/bin/env bash
# node.sh — make a provisioned VM (test/vm/provision.sh --node) a skiff node
# with `skiff install`: the Vagrantfile's provisioner and make test-vm's.
#
# Usage: node.sh server --skiff BIN --node-ip IP [--images DIR] [--token-out FILE] [skiff flags...]
#        node.sh agent  --skiff BIN --node-ip IP --server URL (--token T | --token-file F) [--images DIR] [skiff flags...]
#
# --skiff is the skiff binary to install (the repo's bin/skiff, or
# dist/skiff-linux-<arch>); --images a directory of image tarballs the
# agent imports (for clusters without a registry); --token-out where the
# server's join token is copied for the agents.
set -euo pipefail

role=${1:-}
shift || true
case "${role}" in
server | agent) ;;
*) printf 'usage: %s server|agent --skiff BIN --node-ip IP ...\n' "$0" >&2; exit 2 ;;
esac

skiff="" node_ip="" images="" token_out="" token_file="" args=()
while (($#)); do
	case "$1" in
	--skiff) skiff=$2; shift 2 ;;
	--node-ip) node_ip=$2; shift 2 ;;
	--images) images=$2; shift 2 ;;
	--token-out) token_out=$2; shift 2 ;;
	--token-file) token_file=$2; shift 2 ;;
	*) args+=("$1"); shift ;;
	esac
done
[[ -x ${skiff} ]] || { printf 'node.sh: --skiff %s: no such executable\n' "${skiff}" >&2; exit 1; }
[[ -n ${node_ip} ]] || { printf 'node.sh: --node-ip is required\n' >&2; exit 1; }
[[ -z ${token_file} ]] || args+=(--token "$(cat "${token_file}")")

if [[ -n ${images} ]]; then
	mkdir -p /var/lib/skiff/agent/images
	cp "${images}"/*.tar /var/lib/skiff/agent/images/
fi

if [[ ${role} == server ]]; then
	"${skiff}" install server --node-ip "${node_ip}" --advertise-address "${node_ip}" "${args[@]}"
	if [[ -n ${token_out} ]]; then
		install -m 0600 /var/lib/skiff/server/token "${token_out}"
	fi
else
	"${skiff}" install agent --node-ip "${node_ip}" "${args[@]}"
fi
