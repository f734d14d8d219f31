#!/usr/bin/env bash
# image.sh — build the Debian 12 VM image of skiff's VM tier (make test-vm,
# the Vagrant lab's local box) from Debian's packages only: mmdebstrap, the
# Debian kernel, systemd, sshd, and the packages test/vm/provision.sh --node
# installs (run in the image, as Vagrant runs it on a box).
#
# Usage: sudo test/vm/image.sh [--arch amd64|arm64] [--out DIR] [--box]
#
# DIR (default /var/cache/skiff-vm/<arch>) gets:
#   rootfs.img            raw ext4 root filesystem (no partition table)
#   vmlinuz, initrd.img   the image's kernel and initramfs, for direct boot
#   id_ed25519[.pub]      the key root logs in with over ssh
#   ssh_host_ed25519_key.pub   the VMs' host key, for the client to pin
#   busybox               the image's static busybox (test images of its arch)
#   skiff-debian12-<arch>.box  with --box: a vagrant-libvirt box of it
#   stamp                 hash of what built it: a rebuild is skipped while
#                         this script and provision.sh are unchanged
#
# In the VM: systemd as PID 1, root over ssh with the key, the NIC in PCI
# slot 3 named ens3 on DHCP (QEMU user networking, for ssh), the one in
# slot 4 named ens4 for the cluster, configured from the kernel's ip= (the
# names are given in the initramfs too, before anything names them; on
# arm64's virt machine a slot's path is platform-…-pci-…), and the
# host's share tagged "skiff" (9p) mounted at /mnt/skiff when present;
# network-online.target waits for any one link, not all.
set -euo pipefail

arch=amd64 out="" box=false
while (($#)); do
	case "$1" in
	--arch) arch=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	--box) box=true; shift ;;
	*) printf 'usage: %s [--arch amd64|arm64] [--out DIR] [--box]\n' "$0" >&2; exit 2 ;;
	esac
done
case "${arch}" in
amd64 | arm64) ;;
*) printf 'image.sh: --arch %s: want amd64 or arm64\n' "${arch}" >&2; exit 2 ;;
esac
out=${out:-/var/cache/skiff-vm/${arch}}
here=$(cd "$(dirname "$0")" && pwd)
log() { printf 'image.sh: %s\n' "$*" >&2; }

[[ ${EUID} -eq 0 ]] || { log "must run as root"; exit 1; }
command -v mmdebstrap >/dev/null || { log "mmdebstrap missing: run test/vm/provision.sh"; exit 1; }

stamp=$(cat "$0" "${here}/provision.sh" | sha256sum | cut -d' ' -f1)-${arch}
host_arch=$(dpkg --print-architecture)
if [[ -f ${out}/stamp && $(cat "${out}/stamp") == "${stamp}" && -f ${out}/rootfs.img ]] && { ! ${box} || [[ -f ${out}/skiff-debian12-${arch}.box ]]; }; then
	log "image for ${arch} up to date in ${out}"
	exit 0
fi

mkdir -p "${out}"
work=$(mktemp -d "${out}/build.XXXXXX")
undo=()
cleanup() {
	for ((i = ${#undo[@]} - 1; i >= 0; i--)); do eval "${undo[i]}" || true; done
	rm -rf "${work}"
}
trap cleanup EXIT
root=${work}/root

# A foreign root runs its maintainer scripts under qemu-user: register the
# interpreter with binfmt_misc for the build, and take back what was added.
if [[ ${arch} != "${host_arch}" ]]; then
	qemu_arch=$([[ ${arch} == arm64 ]] && echo aarch64 || echo x86_64)
	binfmt=/proc/sys/fs/binfmt_misc
	if [[ ! -e ${binfmt}/register ]]; then
		mount -t binfmt_misc binfmt_misc "${binfmt}"
		undo+=("umount ${binfmt}")
	fi
	if [[ ! -e ${binfmt}/qemu-${qemu_arch} ]]; then
		conf=/usr/lib/binfmt.d/qemu-${qemu_arch}.conf
		[[ -f ${conf} ]] || { log "${conf} missing: apt-get install qemu-user-static"; exit 1; }
		cat "${conf}" > "${binfmt}/register"
		undo+=("echo -1 > ${binfmt}/qemu-${qemu_arch}")
	fi
fi

# The mirror apt uses on this machine.
mirror=http://deb.debian.org/debian
if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
	mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
elif [[ -f /etc/apt/sources.list ]]; then
	mirror=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
fi

console=ttyS0
[[ ${arch} == arm64 ]] && console=ttyAMA0
ssh-keygen -q -t ed25519 -N '' -C skiff-vm -f "${work}/id_ed25519"

log "building the ${arch} root from ${mirror} (about a minute)"
mmdebstrap --variant=minbase --architectures="${arch}" \
	--include="linux-image-${arch},systemd-sysv,udev,kmod,iproute2,openssh-server,sudo,ca-certificates,busybox-static" \
	--customize-hook="copy-in ${here}/provision.sh /root" \
	--customize-hook='chroot "$1" bash /root/provision.sh --node && rm "$1/root/provision.sh"' \
	--customize-hook='mkdir -p "$1/root/.ssh" "$1/mnt/skiff" && chmod 700 "$1/root/.ssh"' \
	--customize-hook="copy-in ${work}/id_ed25519.pub /root/.ssh" \
	--customize-hook='mv "$1/root/.ssh/id_ed25519.pub" "$1/root/.ssh/authorized_keys"' \
	--customize-hook='printf "/dev/vda / ext4 rw,errors=remount-ro 0 1\nskiff /mnt/skiff 9p trans=virtio,version=9p2000.L,msize=524288,nofail,x-systemd.device-timeout=5s 0 0\n" > "$1/etc/fstab"' \
	--customize-hook='printf "[Match]\nPath=*pci-0000:00:03.0\n\n[Link]\nName=ens3\n" > "$1/etc/systemd/network/10-slot3.link"' \
	--customize-hook='printf "[Match]\nPath=*pci-0000:00:04.0\n\n[Link]\nName=ens4\n" > "$1/etc/systemd/network/10-slot4.link"' \
	--customize-hook='printf "[Match]\nPath=*pci-0000:00:03.0\n\n[Network]\nDHCP=ipv4\n" > "$1/etc/systemd/network/10-user.network"' \
	--customize-hook='chroot "$1" update-initramfs -u' \
	--customize-hook='mkdir -p "$1/etc/systemd/system/systemd-networkd-wait-online.service.d" && printf "[Service]\nExecStart=\nExecStart=/lib/systemd/systemd-networkd-wait-online --any --timeout=30\n" > "$1/etc/systemd/system/systemd-networkd-wait-online.service.d/any.conf"' \
	--customize-hook='echo "nameserver 10.0.2.3" > "$1/etc/resolv.conf"' \
	--customize-hook='echo skiff-vm > "$1/etc/hostname"' \
	--customize-hook='chroot "$1" systemctl enable systemd-networkd ssh' \
	--customize-hook="chroot \"\$1\" systemctl enable serial-getty@${console}" \
	bookworm "${root}" "${mirror}"

cp "${root}"/boot/vmlinuz-* "${work}/vmlinuz"
cp "${root}"/boot/initrd.img-* "${work}/initrd.img"
cp "${root}/etc/ssh/ssh_host_ed25519_key.pub" "${root}/bin/busybox" "${work}/"
truncate -s 4G "${work}/rootfs.img"
mkfs.ext4 -q -L skiff-root -d "${root}" "${work}/rootfs.img"
mv "${work}"/{rootfs.img,vmlinuz,initrd.img,id_ed25519,id_ed25519.pub,ssh_host_ed25519_key.pub,busybox} "${out}/"
if ${box}; then
	"${here}/box.sh" "${out}" "${arch}" "${console}"
fi
echo "${stamp}" > "${out}/stamp"
log "image for ${arch} in ${out}: $(du -sh --apparent-size "${root}" | cut -f1) root"
