#!/bin/busybox sh
# shellcheck shell=dash
# /init of the ssdq test VM's initramfs (busybox only).
#
# It turns the guest into "the host's userland on the guest kernel":
#  - the host's / arrives read-only over virtio-9p (tag hostroot) at /host;
#  - the repo arrives writable over a second 9p share (tag repo) and is
#    mounted at the SAME path inside /host, so guest paths == host paths;
#  - proc, sys, dev and a tmpfs /tmp are mounted inside, then we chroot and
#    run the script named by ssdq_script= on the kernel command line.
# The script's exit code is written next to it (ssdq_script.rc), then the VM
# ends by rebooting: QEMU runs with -no-reboot, so a reboot (or a panic)
# stops it, whatever ACPI the kernel has (poweroff needs ACPI's
# interpreter, and only halts without it).
# Optional: ssdq_modules=DIR (the debug kernel's modules_install tree, on
# the host) is bind-mounted over /lib/modules so modprobe finds its modules.

/bin/busybox mkdir -p /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/sbin:/bin:/usr/sbin:/usr/bin

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev

halt_vm() {
	sync
	reboot -f
	# Should not get here; sysrq 'b' is the last resort.
	echo b >/proc/sysrq-trigger
	sleep 60
}

panic_out() {
	echo "ssdq-init: FATAL: $*"
	dmesg | tail -n 15
	halt_vm
}

# vm.sh's KVM probe looks for this line: it proves userspace was reached.
echo "ssdq-init: started"

for a in $(cat /proc/cmdline); do
	case $a in
	ssdq_repo=*) REPO=${a#ssdq_repo=} ;;
	ssdq_script=*) SCRIPT=${a#ssdq_script=} ;;
	ssdq_modules=*) MODULES=${a#ssdq_modules=} ;;
	esac
done
[ -n "$REPO" ] && [ -n "$SCRIPT" ] || panic_out "ssdq_repo=/ssdq_script= missing"

# 9p and its dependencies, in dependency order (mkinitramfs.sh wrote it).
while read -r m; do
	insmod "/lib/modules/$m" || panic_out "insmod $m failed"
done </lib/modules/order

# msize: bigger 9p messages make fio/bash start noticeably faster under TCG.
O9=trans=virtio,version=9p2000.L,msize=512000
mkdir -p /host
mount -t 9p -o "$O9,ro,cache=loose" hostroot /host || panic_out "mount hostroot"
mount -t proc proc /host/proc
mount -t sysfs sys /host/sys
mount -t devtmpfs dev /host/dev
# What udev/systemd would normally provide: bash process substitution needs
# /dev/fd, and some tools want /dev/shm.
ln -sf /proc/self/fd /host/dev/fd
ln -sf /proc/self/fd/0 /host/dev/stdin
ln -sf /proc/self/fd/1 /host/dev/stdout
ln -sf /proc/self/fd/2 /host/dev/stderr
mkdir -p /host/dev/shm /host/dev/pts
mount -t tmpfs -o mode=1777 shm /host/dev/shm
mount -t devpts devpts /host/dev/pts
mount -t tmpfs -o mode=1777 tmp /host/tmp
if [ -n "$MODULES" ]; then
	mount -o bind "/host$MODULES" /host/lib/modules ||
		panic_out "bind-mount $MODULES on /lib/modules"
fi
mount -t tmpfs tmp /host/run
mkdir -p /host/sys/kernel/debug 2>/dev/null
mount -t debugfs debugfs /host/sys/kernel/debug 2>/dev/null
# The repo last: a checkout under /tmp or /run must not end up hidden below
# the tmpfs mounted there (the mkdir then happens on that tmpfs). cache=none
# on the writable share so results are on the host as written.
mkdir -p "/host$REPO" 2>/dev/null
mount -t 9p -o "$O9,cache=none" repo "/host$REPO" || panic_out "mount repo at $REPO"

# Get the CRNG initialized now, while nothing else runs. Its "ready" static
# key is flipped by live code patching (int3 + IPIs), and under multi-threaded
# TCG a vCPU inside crng_make_state() during the flip can execute the stale
# int3 and oops ("Oops: int3" in crng_make_state, seen mid-fio). A blocking
# read makes the kernel gather jitter entropy right away.
head -c 1 /dev/random >/dev/null
echo "ssdq-init: $(dmesg | grep -m1 'crng init done')"

echo "ssdq-init: running $SCRIPT"
chroot /host /bin/bash "$SCRIPT"
rc=$?
echo "$rc" >"/host$SCRIPT.rc"
echo "ssdq-init: script exited with $rc"
umount "/host$REPO" 2>/dev/null
halt_vm
