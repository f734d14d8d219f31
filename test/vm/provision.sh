#!/usr/bin/env bash
# provision.sh — install everything a skiff node and its test suite need,
# from Debian 12 (bookworm) packages only. Idempotent: if every package is
# already installed it does not touch apt at all.
#
# It deliberately does NOT:
#   - change sysctls or load kernel modules (skiff / the tests do that),
#   - start or enable containerd as a service (skiff runs its own containerd),
#   - download Go (no internet here besides apt and the Go module proxy);
#     it only checks that Go >= 1.26 is present.
#
# Usage: sudo test/vm/provision.sh          a machine that builds and tests skiff
#        sudo test/vm/provision.sh --node   a node that only runs skiff (the VMs,
#                                            Vagrant): no Go, no build or test tools
set -euo pipefail

node_only=false
case "${1:-}" in
--node) node_only=true ;;
"") ;;
*) printf 'usage: %s [--node]\n' "$0" >&2; exit 2 ;;
esac

readonly MIN_GO_MAJOR=1 MIN_GO_MINOR=26

# Debian package names (bookworm). Notes:
#   containernetworking-plugins installs the CNI binaries in /usr/lib/cni
#   (not /opt/cni/bin); util-linux provides nsenter/unshare/lsblk; mount
#   provides mount/umount/losetup; busybox-static provides /bin/busybox, a
#   static binary usable as a tiny test image rootfs.
# What a node runs skiff with.
readonly NODE_PACKAGES=(
	# container runtime
	containerd
	runc
	containernetworking-plugins
	# networking (kube-proxy-style rules, CNI)
	iptables
	conntrack
	iproute2
	kmod
	# base system tools
	ca-certificates
	util-linux
	mount
	procps
)
# What building and testing skiff needs besides.
readonly DEV_PACKAGES=(
	# networking tools the tests and debugging use
	nftables
	ipset
	ethtool
	socat
	iputils-ping
	netcat-openbsd
	# base system tools used by the tests
	busybox-static
	e2fsprogs
	psmisc
	lsof
	curl
	jq
	openssl
	tar
	gzip
	xz-utils
	# build toolchain (Go itself is checked, not installed)
	git
	make
	gcc
	libc6-dev
	pkg-config
	# the conformance images' busybox, from Debian's source package
	dpkg-dev
	bzip2
	patch
	# the chaos tier's small disk (lab.sh LAB_SMALL_DISK: mkfs.ext4, losetup)
	e2fsprogs
	mount
	# arm64 unit tests under qemu-user (make test-arm64)
	qemu-user-static
	# the VM tier (make test-vm): Debian VM images and QEMU
	mmdebstrap
	qemu-system-x86
	qemu-utils
	# make test-vm-arm64: an arm64 VM under emulation (arch-test: mmdebstrap's
	# check that a foreign root can run)
	qemu-system-arm
	arch-test
	# the live page's test in a real browser (headless, through chromedp)
	chromium
)
PACKAGES=("${NODE_PACKAGES[@]}")
${node_only} || PACKAGES+=("${DEV_PACKAGES[@]}")
readonly PACKAGES

log() { printf 'provision: %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

[[ ${EUID} -eq 0 ]] || die "must run as root (try: sudo $0)"

# --- Go -----------------------------------------------------------------------
# Check first: it is the one thing this script cannot fix. Nodes need none.
find_go() {
	if [[ -x /usr/local/go/bin/go ]]; then
		echo /usr/local/go/bin/go
	elif command -v go >/dev/null 2>&1; then
		command -v go
	else
		return 1
	fi
}

check_go() {
	GO_BIN=$(find_go) || die "Go >= ${MIN_GO_MAJOR}.${MIN_GO_MINOR} is required but was not found at /usr/local/go/bin/go or on PATH. Install Go at /usr/local/go first (this script does not download Go)."
	GO_VERSION=$("${GO_BIN}" env GOVERSION 2>/dev/null) || die "could not run '${GO_BIN} env GOVERSION'"
	# GOVERSION looks like go1.26.8, go1.26rc1 or devel-style strings.
	if [[ ${GO_VERSION} =~ ^go([0-9]+)\.([0-9]+) ]]; then
		go_major=${BASH_REMATCH[1]} go_minor=${BASH_REMATCH[2]}
		if (( go_major < MIN_GO_MAJOR || (go_major == MIN_GO_MAJOR && go_minor < MIN_GO_MINOR) )); then
			die "Go >= ${MIN_GO_MAJOR}.${MIN_GO_MINOR} is required, but ${GO_BIN} is ${GO_VERSION}. Install a newer Go at /usr/local/go (this script does not download Go)."
		fi
	else
		die "cannot parse Go version '${GO_VERSION}' from ${GO_BIN}; need Go >= ${MIN_GO_MAJOR}.${MIN_GO_MINOR}"
	fi
}
GO_VERSION="no Go (node)" GO_BIN=-
${node_only} || check_go

# --- Debian packages ----------------------------------------------------------
is_installed() {
	[[ $(dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null) == ii* ]]
}

missing=()
for pkg in "${PACKAGES[@]}"; do
	is_installed "${pkg}" || missing+=("${pkg}")
done

if (( ${#missing[@]} == 0 )); then
	log "all ${#PACKAGES[@]} packages already installed; skipping apt"
else
	log "installing ${#missing[@]} missing package(s): ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive

	# Keep maintainer scripts from starting services (notably containerd,
	# which would grab /run/containerd/containerd.sock). Honoured by
	# invoke-rc.d and deb-systemd-invoke. Only add a policy if none exists,
	# and remove only the one we created.
	policy=/usr/sbin/policy-rc.d
	if [[ ! -e ${policy} ]]; then
		printf '#!/bin/sh\n# temporary, created by skiff provision.sh\nexit 101\n' >"${policy}"
		chmod 0755 "${policy}"
		trap 'rm -f "${policy}"' EXIT
	fi

	apt-get update -q
	apt-get install -y -q --no-install-recommends "${missing[@]}"

	still_missing=()
	for pkg in "${missing[@]}"; do
		is_installed "${pkg}" || still_missing+=("${pkg}")
	done
	(( ${#still_missing[@]} == 0 )) || die "packages not installed after apt-get: ${still_missing[*]}"
fi

# A node runs skiff's own containerd: Debian's containerd.service (enabled by
# the package where systemd is) would only hold memory.
if ${node_only} && command -v systemctl >/dev/null 2>&1; then
	systemctl disable containerd.service >/dev/null 2>&1 || true
fi

# --- sanity checks on what skiff actually execs -------------------------------
bins=(containerd containerd-shim-runc-v2 runc iptables ip nsenter conntrack)
${node_only} || bins+=(socat busybox qemu-aarch64-static mmdebstrap qemu-system-x86_64)
for bin in "${bins[@]}"; do
	command -v "${bin}" >/dev/null 2>&1 || die "'${bin}' not found on PATH after install"
done
[[ -x /usr/lib/cni/bridge ]] || die "CNI plugins not found in /usr/lib/cni"

pkg_version() { dpkg-query -W -f='${Version}' "$1"; }
printf 'provision: ok — %d packages (%d newly installed); %s (%s); containerd %s, runc %s, CNI plugins %s in /usr/lib/cni\n' \
	"${#PACKAGES[@]}" "${#missing[@]}" "${GO_VERSION}" "${GO_BIN}" \
	"$(pkg_version containerd)" "$(pkg_version runc)" "$(pkg_version containernetworking-plugins)"
