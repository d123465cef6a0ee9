#!/bin/bash
# Find or fetch a guest kernel other than the default 6.12 and print the
# directory the VM boots it from (vm.sh --kernel-dir):
#   DIR/kver                    its release, e.g. 6.1.0-57-amd64
#   DIR/vmlinuz                 the image
#   DIR/lib/modules/<kver>/     its modules, depmod'ed (bind-mounted over
#                               the guest's /lib/modules)
#   DIR/build                   the tree to build ssdq against (M=)
#
#   scripts/kernel.sh 6.1       Debian 12's own kernel (bookworm): the newest
#                               linux-image-6.1.0-N-amd64 apt knows, unpacked
#                               (not installed), and its headers installed.
#   scripts/kernel.sh newest    the newest kernel in Debian's archive:
#                               linux-source-<v> from trixie-backports, built
#                               with gcc-12 from x86_64_defconfig +
#                               kvm_guest.config + kernel-newest.config (the
#                               VM's needs; Debian's prebuilt headers of it
#                               need gcc-14). About 15 min on two cores.
#   scripts/kernel.sh newest --headers
#                               only as far as building modules against it
#                               needs (configured, make modules_prepare:
#                               a minute or two); DIR/build is the tree, and
#                               DIR/vmlinuz exists only once it is built.
#                               make check's CI run builds ssdq there
#                               (build-newest) without booting it.
#
# Debian packages only, through the machine's own apt sources: the archive
# serving this machine's release is asked for the other suite too (its
# address is read from the apt sources, never written here). The cache
# lives outside the repo: ${SSDQ_KERNEL_CACHE:-/var/cache/ssdq/kernels}.
set -euo pipefail
. "$(dirname "$0")/common.sh"

name=${1:?usage: kernel.sh 6.1|newest [--headers]}
mode=${2:-}
root=${SSDQ_KERNEL_CACHE:-/var/cache/ssdq/kernels}
mkdir -p "$root"

# ---- Debian 12's 6.1: a prebuilt image and its headers

debian_6_1() {
	local kver dir ready
	# Cold cache: the package lists may name an ABI the mirror has dropped.
	ready=("$root"/6.1.0-*-amd64/ready)
	[[ -f ${ready[0]} ]] || apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 ||
		note "apt-get update failed; trying the lists apt has"
	kver=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' 2>/dev/null |
		awk '{ print $1 }' | sed 's/^linux-image-//' | sort -V | tail -n1)
	[[ -n $kver ]] || die "apt knows no linux-image-6.1.0-*-amd64 (apt-get update? bookworm in the apt sources?)"
	dir=$root/$kver
	if [[ ! -d /lib/modules/$kver/build ]]; then
		note "installing linux-headers-$kver"
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q \
			--no-install-recommends \
			"linux-headers-$kver" >&2 || die "apt-get install linux-headers-$kver failed"
	fi
	if [[ ! -f $dir/ready ]]; then
		note "fetching linux-image-$kver (unpacked into $dir, not installed)"
		tmp=$(mktemp -d "$root/.fetch.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "linux-image-$kver" >&2) ||
			die "apt-get download linux-image-$kver failed"
		dpkg-deb -x "$tmp"/linux-image-"$kver"_*.deb "$tmp/root"
		rm -rf "$dir"
		mkdir -p "$dir/lib/modules"
		mv "$tmp/root/boot/vmlinuz-$kver" "$dir/vmlinuz"
		mv "$tmp/root/lib/modules/$kver" "$dir/lib/modules/"
		depmod -b "$dir" "$kver"
		echo "$kver" >"$dir/kver"
		touch "$dir/ready"
		rm -rf "$tmp"
		trap - EXIT
	fi
	ln -sfn "/lib/modules/$kver/build" "$dir/build"
	echo "$dir"
}

# ---- the newest kernel: Debian's linux-source from a newer suite

# The archive that serves this machine's release, from its apt sources
# (deb822 .sources or one-line .list).
debian_archive() {
	local codename
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk -v c="$codename" '
		/^URIs:/ { uri = $2 } /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == c) print uri }
		/^$/ { uri = "" }' | head -n1
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v c="$codename" '$1 == "deb" { u = $2; if (u ~ /^\[/) u = $3
			for (i = 2; i <= NF; i++) if ($i == c) print u }' | head -n1
}

# apt-get/apt-cache on a private list of one suite (nothing system-wide).
apt_suite() { # suite cmd args...
	local suite=$1 a=$root/apt uri
	shift
	if [[ ! -s $a/sources/other.sources || $(sed -n 's/^Suites: //p' "$a/sources/other.sources") != "$suite" ]]; then
		uri=$(debian_archive | head -n1)
		[[ -n $uri ]] || die "no Debian archive for this release in the apt sources"
		mkdir -p "$a/sources" "$a/lists/partial" "$a/cache/archives/partial"
		printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$uri" "$suite" >"$a/sources/other.sources"
	fi
	"$@" -q -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$a/sources" \
		-o Dir::State::Lists="$a/lists" -o Dir::Cache="$a/cache" \
		-o APT::Sandbox::User=root
}

newest() {
	local suite=trixie-backports frag=$SSDQ_REPO/scripts/kernel-newest.config
	local pkg srcver key dir kver jobs start
	apt_suite "$suite" apt-get update >&2 ||
		die "apt-get update of $suite failed (reachable through the archive in the apt sources?)"
	pkg=$(apt_suite "$suite" apt-cache search --names-only '^linux-source-[0-9.]+$' |
		awk '{ print $1 }' | sort -V | tail -n1)
	[[ -n $pkg ]] || die "no linux-source-* in $suite"
	srcver=$(apt_suite "$suite" apt-cache show "$pkg" | sed -n 's/^Version: //p' | sort -V | tail -n1)
	# The trims the debug kernel already makes (its part 2), then ours.
	key=$( {
		echo "$pkg $srcver"
		sha256sum <"$frag"
		sed -n '/^## 2\./,$p' "$SSDQ_REPO/scripts/debug-kernel.config" | sha256sum
		gcc --version | head -n1
	} | sha256sum | cut -c1-16)
	dir=$root/$pkg-$key
	if [[ -f $dir/ready || ($mode == --headers && -f $dir/prepared) ]]; then
		echo "$dir"
		return
	fi
	if [[ ! -f $dir/src/.config ]]; then
		note "fetching $pkg $srcver from $suite"
		tmp=$(mktemp -d "$root/.fetch.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(cd "$tmp" && apt_suite "$suite" apt-get download "$pkg" >&2) ||
			die "apt-get download $pkg failed"
		dpkg-deb -x "$tmp"/"$pkg"_*.deb "$tmp/root"
		rm -rf "$dir"
		mkdir -p "$dir/src"
		tar -xf "$tmp"/root/usr/src/"$pkg".tar.* -C "$dir/src" --strip-components=1
		rm -rf "$tmp"
		trap - EXIT
		sed -n '/^## 2\./,$p' "$SSDQ_REPO/scripts/debug-kernel.config" >"$dir/trims.config"
		make -C "$dir/src" -s x86_64_defconfig
		(cd "$dir/src" && KCONFIG_CONFIG=.config scripts/kconfig/merge_config.sh -m -Q \
			.config kernel/configs/kvm_guest.config "$dir/trims.config" "$frag" >/dev/null)
		make -C "$dir/src" -s olddefconfig
		local o
		for o in IRQ_POLL CONFIGFS_FS DEBUG_FS BLK_DEBUG_FS NET_9P_VIRTIO 9P_FS VIRTIO_PCI \
			PCI_MSI DEVTMPFS BLK_DEV_INITRD MODULE_UNLOAD IO_URING EVENT_TRACING; do
			grep -qx "CONFIG_$o=y" "$dir/src/.config" || die "$pkg: CONFIG_$o=y did not survive olddefconfig"
		done
		grep -qx "CONFIG_BLK_DEV_NVME=m" "$dir/src/.config" || die "$pkg: CONFIG_BLK_DEV_NVME=m did not survive"
	fi
	jobs=${SSDQ_KERNEL_JOBS:-$(nproc)}
	if [[ $mode == --headers ]]; then
		note "$pkg: make modules_prepare (log: $dir/prepare.log)"
		make -C "$dir/src" -j"$jobs" modules_prepare >"$dir/prepare.log" 2>&1 ||
			die "$pkg: make modules_prepare failed (see $dir/prepare.log)"
		ln -sfn src "$dir/build"
		touch "$dir/prepared"
		echo "$dir"
		return
	fi
	note "$pkg: building with -j$jobs (log: $dir/build.log)"
	start=$SECONDS
	kver=$(ssdq_build_kernel "$dir" "$dir/vmlinuz" "$dir" "$pkg" "$jobs")
	ln -sfn src "$dir/build"
	# QEMU's _PRT AML loops time out for minutes on a defconfig kernel under
	# TCG without it (debug-lane.rst).
	echo acpi=noirq >"$dir/append"
	echo "$kver" >"$dir/kver"
	touch "$dir/ready"
	note "$pkg ($kver) ready in $((SECONDS - start)) s"
	echo "$dir"
}

exec {lock}>"$root/.lock"
flock "$lock"
case $name in
6.1) [[ -z $mode ]] || die "kernel.sh 6.1 takes no '$mode'"; debian_6_1 ;;
newest) newest ;;
*) die "kernel.sh: unknown kernel '$name' (known: 6.1, newest)" ;;
esac
