# shellcheck shell=bash disable=SC2034 # constants for the scripts that source this
# Guest-side basics shared by the tests (tests/lib.sh) and the bench
# (scripts/guest-bench-lib.sh): the VM's two controllers, waiting without
# starting processes, finding a controller's disk, pinning a driver to it.
#
# Every program started in the guest costs a fraction of a second under
# TCG (and about a second on the debug kernel): its libraries come over
# 9p. So these are bash builtins only.

# serial ssdq0: the driver under test (ssdq, or nvme); behind a root port
# on the PCI Express machine (vm.sh --pcie)
PCI_DUT=${SSDQ_PCI_DUT:-0000:00:04.0}
PCI_REF=0000:00:05.0 # serial nvmeref: always the kernel's nvme
# vm.sh --namespaces: a controller of three namespaces (one detached) in
# an NVMe subsystem, one whose only namespace is nsid 2, and one whose
# namespaces have no block I/O under ssdq (8 bytes of metadata per block,
# apart and in the block; 8 KiB blocks).
PCI_MULTI=0000:00:08.0
PCI_NS2ONLY=0000:00:09.0
PCI_ODD=0000:00:0a.0

# sleep(1) without a process: a read that times out on a pipe nobody
# writes.
nap() { # secs (fractions allowed)
	[[ -n ${NAP_FD:-} ]] || exec {NAP_FD}<> <(:)
	read -r -t "$1" -u "$NAP_FD" _ || true
}

# Poll CMD every 0.1 s until it succeeds (0) or SECS pass (1). Never a
# fixed sleep.
wait_until() { # secs cmd...
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < end)) || return 1
		nap 0.1
	done
}

# The value after KEY in a "key value..." file (debugfs counters).
kv_get() { # file key
	local k v
	while read -r k v; do
		[[ $k == "$2" ]] && { echo "${v%% *}"; return 0; }
	done <"$1"
	return 1
}

# Name of the disk below a PCI device, or nothing. A disk's device is the
# PCI function itself (ssdq) or a controller below it (nvme); -ef compares
# what the links resolve to, without a readlink process per disk.
disk_of_pci() { # pci
	local b p=/sys/bus/pci/devices/$1
	for b in /sys/block/*; do
		if [[ $b/device -ef $p || $b/device/device -ef $p ]]; then
			echo "${b##*/}"
			return 0
		fi
	done
	return 1
}

# Every disk under PCI (a controller of several namespaces), in name order.
disks_of_pci() { # pci
	local b
	for b in /sys/block/*; do
		[[ $b/device -ef /sys/bus/pci/devices/$1 ]] && echo "${b##*/}"
	done
	return 0
}

# Only DRIVER may bind PCI from now on (a name no driver has: none).
set_override() { # pci driver
	echo "$2" >"/sys/bus/pci/devices/$1/driver_override"
}

# The driver bound to PCI, or nothing.
bound_driver() { # pci
	local l=/sys/bus/pci/devices/$1/driver
	[[ -e $l ]] && echo "$(cd -P "$l" && echo "${PWD##*/}")"
	return 0
}

module_loaded() { [[ -d /sys/module/$1 ]]; }
