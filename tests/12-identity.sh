#!/bin/bash
# identity: what user space reads to name a disk (its wwid, nsid and
# namespace ids; its parent device's serial, model and firmware_rev; lsblk's
# MODEL, SERIAL and WWN) is, byte for byte, what the kernel's nvme driver
# shows for the same controller: the DUT's PCI function is handed from ssdq
# to nvme and back within the boot, and its data survives both moves. With
# systemd-udevd running on the shipped rules (scripts/60-ssdq.rules), the
# disk gets a by-id link for each of nvme's (ssdq-X where nvme has nvme-X),
# a by-path link, and a partition's filesystem mounts by UUID= through its
# by-uuid link.
# In the debug lane only with SSDQ_DEBUG_FULL=1 (CI's budget): load and
# unbind add and remove its sysfs group there.
# debug-lane: full
# timeout: 300
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[[ $DUT == ssdq ]] || skip "compares ssdq with nvme on one controller; nothing to do for $DUT"

NS_ATTRS="wwid nsid eui nguid uuid"
CTRL_ATTRS="serial model firmware_rev"

# Every attribute as "name=value" lines ("name absent" where there is no
# file), then lsblk's columns read from sysfs (no udev in this guest).
identity() { # disk
	local a b=/sys/block/$1
	for a in $NS_ATTRS; do
		if [[ -e $b/$a ]]; then echo "$a=$(cat "$b/$a")"; else echo "$a absent"; fi
	done
	for a in $CTRL_ATTRS; do
		[[ -r $b/device/$a ]] || fail "$1: no device/$a"
		echo "device/$a=$(cat "$b/device/$a")"
	done
	lsblk -dn -o MODEL,SERIAL,WWN "/dev/$1" | sed 's/^/lsblk=/'
}

bind_to() { # driver
	local drv=$1
	echo "$PCI_DUT" >"/sys/bus/pci/devices/$PCI_DUT/driver/unbind"
	set_override "$PCI_DUT" "$drv"
	echo "$PCI_DUT" >"/sys/bus/pci/drivers/$drv/bind" || fail "binding $PCI_DUT to $drv failed"
	wait_for 60 "a $drv disk under $PCI_DUT" disk_of_pci "$PCI_DUT" >/dev/null
	DISK=$(disk_of_pci "$PCI_DUT")
	DEV=/dev/$DISK
	wait_for 10 "$DEV" test -b "$DEV"
	ok "$PCI_DUT bound to $drv: $DEV"
}

dut_load
keep=$(pattern_file keep.bin "$REG_KEEP_LEN")
dev_write "$keep" "$DEV" "$REG_KEEP_OFF" || fail "writing keep data failed"
identity "$DISK" >"$T_DIR/ssdq.txt"
sed 's/^/  ssdq: /' "$T_DIR/ssdq.txt"
grep -q '^wwid=\(uuid\|eui\|nvme\)\.' "$T_DIR/ssdq.txt" || fail "wwid not in nvme's form: $(grep wwid "$T_DIR/ssdq.txt")"
assert_eq "nsid" "$(cat "/sys/block/$DISK/nsid")" 1
# The harness names the DUT's controller serial=ssdq0 (scripts/vm.sh).
[[ $(cat "/sys/block/$DISK/device/serial") == "ssdq0 "* ]] ||
	fail "device/serial: '$(cat "/sys/block/$DISK/device/serial")', QEMU was given ssdq0"

# --- udev: the rules on a partition with a filesystem, in the integrity
# region (30-integrity writes over it later; wiped at the end).
link_of() { readlink -f "$1" 2>/dev/null; }
assert_link() { # link target
	[[ $(link_of "$1") == "$2" ]] || fail "$1 -> '$(link_of "$1")', want $2"
}
links_to() { [[ $(link_of "$1") == "$2" ]]; }
# The by-id names (without PREFIX-) of the links to TARGET, partitions' not.
by_id_names() { # prefix target
	local l
	for l in /dev/disk/by-id/"$1"-*; do
		if [[ -e $l && $l != *-part[0-9]* && $(link_of "$l") == "$2" ]]; then
			echo "${l#/dev/disk/by-id/"$1"-}"
		fi
	done | sort
}
settle() { udevadm settle -t 60 || fail "udev did not settle in 60 s"; }
UDEVD=
mnt=$T_DIR/mnt
PART=${DISK}p1
# On any way out: udevd gone with its links, no partition table left on
# the disk, and the DUT's function back with ssdq's override, unbound from
# nvme, as the next test expects it.
cleanup() {
	local d
	umount "$mnt" 2>/dev/null || true
	d=$(disk_of_pci "$PCI_DUT" || true)
	[[ -z $d ]] || wipefs -q -a "/dev/$d" 2>/dev/null || true
	if [[ -n $UDEVD ]]; then
		kill "$UDEVD" 2>/dev/null || true
		wait "$UDEVD" 2>/dev/null || true
		UDEVD=
	fi
	umount /etc/udev/rules.d 2>/dev/null || true
	rm -rf /dev/disk /run/udev
	if [[ $(bound_driver "$PCI_DUT") == nvme ]]; then
		echo "$PCI_DUT" >/sys/bus/pci/drivers/nvme/unbind || true
	fi
	set_override "$PCI_DUT" ssdq
}
trap cleanup EXIT
# The guest runs its userland in a chroot, where udevadm otherwise ignores
# every request to udevd ("Running in chroot, ignoring request").
export SYSTEMD_IGNORE_CHROOT=1
# The repo's rules, and none the host may have installed (the guest runs
# the host's /etc): a tmpfs over /etc/udev/rules.d holds only them.
mount -t tmpfs -o mode=0755 udevrules /etc/udev/rules.d
cp "$SSDQ_REPO/scripts/60-ssdq.rules" /etc/udev/rules.d/
# In this test's process group, so a timeout's kill takes it too.
SYSTEMD_LOG_TARGET=console /lib/systemd/systemd-udevd --resolve-names=never \
	>"$T_DIR/udevd.log" 2>&1 &
UDEVD=$!
udevd_up() { udevadm control --ping 2>/dev/null; }
wait_for 10 "systemd-udevd to answer" udevd_up
udevadm trigger --action=add "/sys/block/$DISK"
settle
echo 'label: gpt
start=1MiB, size=63MiB, name=ssdqtest' | sfdisk -q --lock "$DEV" || fail "sfdisk on $DEV failed"
# The watch's change event re-reads the table: wait for it to be over.
settle
wait_for 10 "/dev/$PART" test -b "/dev/$PART"
# The kernel's request_module() would run the initramfs's modprobe.
grep -qw ext4 /proc/filesystems || modprobe ext4 || fail "modprobe ext4 failed"
mkfs.ext4 -q -F -L ssdqtest "/dev/$PART" || fail "mkfs.ext4 on /dev/$PART failed"
# No trigger: the rules' watch turns mkfs's close into a change event.
fs_uuid=$(blkid -p -s UUID -o value "/dev/$PART")
wait_for 30 "by-uuid/$fs_uuid from the watch" links_to "/dev/disk/by-uuid/$fs_uuid" "/dev/$PART"
settle
# What lsblk shows now comes from udev's database (the rules' ID_*).
identity "$DISK" >"$T_DIR/ssdq-udev.txt"
wwid=$(cat "/sys/block/$DISK/wwid")
nsid=$(cat "/sys/block/$DISK/nsid")
partuuid=$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$PART")
by_path=/dev/disk/by-path/pci-$PCI_DUT-nvme-$nsid
assert_link "/dev/disk/by-id/ssdq-$wwid" "$DEV"
assert_link "/dev/disk/by-id/ssdq-$wwid-part1" "/dev/$PART"
assert_link "$by_path" "$DEV"
assert_link "$by_path-part1" "/dev/$PART"
assert_link "/dev/disk/by-label/ssdqtest" "/dev/$PART"
assert_link "/dev/disk/by-partuuid/$partuuid" "/dev/$PART"
assert_link "/dev/disk/by-partlabel/ssdqtest" "/dev/$PART"
ok "udev links: by-id (wwid), by-path, by-uuid, by-label, by-partuuid, by-partlabel"
# libblkid told to find UUID= by udev's link only, not by scanning.
echo 'EVALUATE=udev' >"$T_DIR/blkid.conf"
mkdir -p "$mnt"
BLKID_CONF=$T_DIR/blkid.conf mount UUID="$fs_uuid" "$mnt" ||
	fail "mount UUID=$fs_uuid (through /dev/disk/by-uuid) failed"
assert_eq "what mount UUID= mounted" "$(findmnt -no SOURCE "$mnt")" "/dev/$PART"
echo ssdq >"$mnt/hello"
umount "$mnt"
by_id_names ssdq "$DEV" >"$T_DIR/by-id-ssdq.txt"

[[ -d /sys/module/nvme ]] || modprobe nvme || fail "modprobe nvme failed"
bind_to nvme
settle
identity "$DISK" >"$T_DIR/nvme.txt"
diff -u "$T_DIR/nvme.txt" "$T_DIR/ssdq-udev.txt" >"$T_DIR/identity.diff" ||
	fail "ssdq and nvme differ on one controller: $(grep '^[-+][^-+]' "$T_DIR/identity.diff" | tr '\n' ' ')"
ok "all $(wc -l <"$T_DIR/nvme.txt") identity lines equal nvme's for $PCI_DUT"
# lsblk found its columns in sysfs too, without udev.
[[ $(grep -c '^lsblk=.*ssdq0' "$T_DIR/ssdq.txt") == 1 ]] ||
	fail "lsblk (no udev) shows no SERIAL for ssdq: $(grep '^lsblk=' "$T_DIR/ssdq.txt")"
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "data written through ssdq, read through nvme"
# Debian's rules name nvme's disk of the same controller: one ssdq-X link
# for each of its nvme-X ones (X: wwid, model_serial_nsid), but for the
# model_serial one those rules keep only for compatibility (it names no
# namespace).
mapfile -t names < <(by_id_names nvme "$DEV")
for n in "${names[@]}"; do
	[[ " ${names[*]} " == *" ${n}_$nsid "* ]] || echo "$n"
done >"$T_DIR/by-id-nvme.txt"
[[ -s $T_DIR/by-id-nvme.txt ]] || fail "udev gave nvme's disk no by-id link"
missing=$(comm -23 "$T_DIR/by-id-nvme.txt" "$T_DIR/by-id-ssdq.txt")
[[ -z $missing ]] || fail "by-id names nvme has and ssdq has not: ${missing//$'\n'/ }"
ok "by-id: ssdq has each of nvme's $(wc -l <"$T_DIR/by-id-nvme.txt") names: $(tr '\n' ' ' <"$T_DIR/by-id-nvme.txt")"
# by-path: the same name, now nvme's disk.
assert_link "$by_path" "$DEV"
assert_link "$by_path-part1" "/dev/${DISK}p1"
ok "by-path: nvme's disk has ssdq's name, $by_path"

bind_to ssdq
dev_cmp "$DEV" "$REG_KEEP_OFF" "$REG_KEEP_LEN" "$keep" "the same data back through ssdq"
settle
identity "$DISK" >"$T_DIR/ssdq2.txt"
diff -q "$T_DIR/ssdq-udev.txt" "$T_DIR/ssdq2.txt" >/dev/null || fail "ssdq's identity changed across a rebind"
ok "ssdq's identity is the same after the rebind"
wipefs -q -a "$DEV" || fail "wipefs on $DEV failed"
wait_for 10 "/dev/$PART to go" test ! -e "/dev/$PART"
cleanup
trap - EXIT
dut_unload
