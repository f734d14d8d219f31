#!/usr/bin/env bash
# box.sh — a vagrant-libvirt box of the image test/vm/image.sh built in DIR,
# for a Vagrant lab without a box server (called by image.sh --box).
#
# Usage: test/vm/box.sh DIR ARCH CONSOLE
#
# The box boots the image's kernel directly (vagrant-libvirt's kernel,
# initrd and cmd_line), with a "vagrant" user that logs in with Vagrant's
# public key (from the installed vagrant package) and may sudo; every
# ethernet link gets DHCP; rsync is added for Vagrant's synced folder. Add
# it with:
#   vagrant box add --name skiff-debian12 DIR/skiff-debian12-ARCH.box
set -euo pipefail
dir=$1 arch=$2 console=$3
log() { printf 'box.sh: %s\n' "$*" >&2; }

key=$(find /usr/share/rubygems-integration /usr/lib/ruby /opt/vagrant -path '*vagrant*/keys/vagrant.pub' 2>/dev/null | head -n1 || true)
[[ -n ${key} ]] || { log "Vagrant's public key not found: install vagrant (apt-get install vagrant)"; exit 1; }

work=$(mktemp -d "${dir}/box.XXXXXX")
mnt=${work}/mnt
trap 'mountpoint -q "${mnt}/proc" && umount "${mnt}/proc"; mountpoint -q "${mnt}" && umount "${mnt}"; rm -rf "${work}"' EXIT
cp --sparse=always "${dir}/rootfs.img" "${work}/root.img"
mkdir -p "${mnt}"
mount -o loop "${work}/root.img" "${mnt}"
chroot "${mnt}" useradd --create-home --shell /bin/bash vagrant
install -d -m 0700 -o 1000 -g 1000 "${mnt}/home/vagrant/.ssh"
install -m 0600 -o 1000 -g 1000 "${key}" "${mnt}/home/vagrant/.ssh/authorized_keys"
echo 'vagrant ALL=(ALL) NOPASSWD: ALL' > "${mnt}/etc/sudoers.d/vagrant"
chmod 0440 "${mnt}/etc/sudoers.d/vagrant"
printf '[Match]\nName=en*\n\n[Network]\nDHCP=ipv4\n' > "${mnt}/etc/systemd/network/99-dhcp.network"
# rsync from Debian's mirror, with the host's resolver for the while; then
# libvirt's management network's DNS.
cp /etc/resolv.conf "${mnt}/etc/resolv.conf"
mount -t proc proc "${mnt}/proc"
printf '#!/bin/sh\nexit 101\n' > "${mnt}/usr/sbin/policy-rc.d"
chmod 0755 "${mnt}/usr/sbin/policy-rc.d"
chroot "${mnt}" sh -c 'apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends rsync && apt-get clean' >&2
rm -f "${mnt}/usr/sbin/policy-rc.d"
umount "${mnt}/proc"
echo "nameserver 192.168.121.1" > "${mnt}/etc/resolv.conf"
umount "${mnt}"

qemu-img convert -O qcow2 "${work}/root.img" "${work}/box.img"
cp "${dir}/vmlinuz" "${dir}/initrd.img" "${work}/"
printf '{"provider": "libvirt", "format": "qcow2", "virtual_size": 4}\n' > "${work}/metadata.json"
cat > "${work}/Vagrantfile" <<VAGRANTFILE
Vagrant.configure("2") do |config|
  config.vm.provider :libvirt do |lv|
    lv.kernel = File.join(File.dirname(__FILE__), "vmlinuz")
    lv.initrd = File.join(File.dirname(__FILE__), "initrd.img")
    lv.cmd_line = "root=/dev/vda rw console=${console}"
    lv.driver = ENV.fetch("SKIFF_LIBVIRT_DRIVER", "kvm") # "qemu" where KVM guests do not run
  end
end
VAGRANTFILE
tar -C "${work}" -czf "${dir}/skiff-debian12-${arch}.box" metadata.json Vagrantfile box.img vmlinuz initrd.img
log "box in ${dir}/skiff-debian12-${arch}.box"
