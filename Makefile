# ssdq: build, lint and test entry points. kbuild reads ./Kbuild for the
# module itself; this file is only what `make` in the repo runs.
#
#   make / make module   build ./ssdq.ko against the Debian 6.12 headers
#   make run             deps, build, boot the VM, short fio on /dev/ssdq0
#   make check           deps, build, lint, whole test suite in the VM, in
#                        both lanes: Debian's kernel, then the debug kernel
#                        (KASAN, lockdep, kmemleak, UBSAN; built once, cached)
#   make check-prod      only the first lane; make check-debug only the debug
#                        one; make check-reach only the other kernels' subset
#   make check KERNEL=6.1   every test on Debian 12's 6.1 (KERNEL=6.12: prod,
#                        KERNEL=newest: 7.3, built from Debian's source)
#   make debug-kernel    build (or find) the cached debug kernel, print its dir
#   make lint            checkpatch --strict, sparse, W=1; shellcheck of the harness
#   make install         ssdq.ko into /lib/modules/<KDIR's>/updates, and the
#                        udev rules (scripts/60-ssdq.rules) into /etc/udev
#   make deps            install missing Debian packages (root)
#   make clean
#
# KDIR defaults to the newest /lib/modules/6.12*-amd64/build that has a
# matching /boot/vmlinuz; override with make KDIR=... . DUT=nvme runs the
# tests against the kernel's nvme driver instead (proves the tests).

KDIR ?= $(shell bash -c '. scripts/common.sh && ssdq_kdir' 2>/dev/null)
DUT ?= ssdq
export DUT

.PHONY: all module install deps lint run check check-prod check-debug check-reach debug-kernel clean

all: module

module:
	@test -n "$(KDIR)" -a -d "$(KDIR)" || \
		{ echo "no 6.12 kernel headers found (KDIR='$(KDIR)'); run: make deps" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

install: module
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=updates modules_install
	@scripts/udev-rules.sh install

deps:
	@scripts/deps.sh

# KDIR is a lazily expanded variable, so in recipes that run after deps it
# sees headers deps may just have installed; module runs in a sub-make.
lint: deps
	@KDIR=$(KDIR) scripts/lint.sh; rc=$$?; scripts/shellcheck.sh || rc=1; exit $$rc

run: deps
	@$(MAKE) --no-print-directory module
	@scripts/run.sh

check: deps
	@KDIR=$(KDIR) scripts/check.sh $(if $(KERNEL),--kernel $(KERNEL),--lane all)

check-prod: deps
	@KDIR=$(KDIR) scripts/check.sh --lane prod

check-debug: deps
	@scripts/check.sh --lane debug

check-reach: deps
	@scripts/check.sh --lane reach

debug-kernel: deps
	@scripts/debug-kernel.sh

# make bench: ssdq side by side with nvme in one VM boot, plus ablations
# (Documentation/bench.rst; about 40 min). make bench-quick, or make bench
# QUICK=1: the short variant (under 5 min). SMP=4: a VM of 4 vCPUs (on 2
# host cores only the ratios count). Not a test: not in make check.
.PHONY: bench bench-quick
bench: deps
	@$(MAKE) --no-print-directory module
	@QUICK=$(QUICK) SMP=$(SMP) scripts/bench.sh

bench-quick: deps
	@$(MAKE) --no-print-directory module
	@SMP=$(SMP) scripts/bench.sh --quick

# make meter: what an I/O costs the guest, counted: guest instructions,
# atomics and device events per I/O by layer and symbol, ssdq beside nvme,
# from a QEMU TCG plugin (Documentation/meter.rst). BOOTS=N boots (default
# 2), make meter-quick: one boot, two jobs. Not a test: not in make check.
.PHONY: meter meter-quick
meter: deps
	@$(MAKE) --no-print-directory module
	@BOOTS=$(or $(BOOTS),2) scripts/meter.sh

meter-quick: deps
	@$(MAKE) --no-print-directory module
	@scripts/meter.sh --quick

# make soak [DURATION=10m] [SEED=N] [KERNEL=debug]: random switches, faults,
# resets, CPU offlining and rebinds under verified I/O, from a printed seed
# (Documentation/testing.rst). Not a test: not in make check.
.PHONY: soak
soak: deps
	@$(MAKE) --no-print-directory module
	@DURATION=$(DURATION) SEED=$(SEED) KERNEL=$(KERNEL) scripts/soak.sh

clean:
	@if [ -n "$(KDIR)" ] && [ -d "$(KDIR)" ]; then $(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	rm -rf build
