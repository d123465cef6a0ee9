#!/bin/bash
# The meter's own test (make check, prod lane; Documentation/meter.rst):
# one short boot of scripts/meter.sh, ssdq alone, 4k random reads at QD32
# with its defaults and with doorbell batching and shadow doorbells off.
# Passes when the meter built and ran, every window pair counted, at least
# 95% of the window's kernel instructions landed on named symbols, and a
# known effect shows with margin: with both off every command rings the SQ
# doorbell by MMIO, so QEMU counts at least 0.9 SQ doorbell writes per I/O
# there, and at most 0.2 with ssdq's defaults (fio submits in batches of
# 16; shadow doorbells let the device skip asking for most); and
# queue/add_random=1 costs the entropy pool's mixing on every I/O (ssdq
# feeds each completion to add_disk_randomness()): at least 40 more
# instructions per I/O in the entropy layer than with ssdq's default 0.
#
#   scripts/meter-check.sh OUTDIR     (prints the reason on failure)
set -euo pipefail
. "$(dirname "$0")/common.sh"

out=${1:?usage: meter-check.sh OUTDIR}
SSDQ_METER_SIDES=ssdq SSDQ_METER_VARIANTS="unbatched:plugging/batching=0,plugging/shadow_doorbells=0
entropy:queue/add_random=1" \
	SSDQ_METER_VARIANT_JOBS=rr4k-qd32x2 SSDQ_METER_N=${SSDQ_METER_N:-1000} \
	"$SSDQ_REPO/scripts/meter.sh" --boots 1 --jobs rr4k-qd32x2 --out "$out" >"$out.log" 2>&1 ||
	die "meter.sh failed: $(grep -m1 -E 'error|FATAL|failed' "$out.log" || tail -n1 "$out.log")"
python3 - "$out/results.json" <<'PY'
import json
import sys

r = json.load(open(sys.argv[1]))
bad = [p for b in r["pairs"] for p in b if not p["ok"]]
if bad:
    sys.exit(f"window pairs left out: {[(p['job'], p['variant'], p['why']) for p in bad]}")
s = {x["variant"]: x for x in r["summary"] if x["side"] == "ssdq" and x["job"] == "rr4k-qd32x2"}
if set(s) != {"default", "unbatched", "entropy"}:
    sys.exit(f"expected ssdq default, unbatched and entropy windows, got {sorted(s)}")
for v, x in s.items():
    if x["named_share"] < 0.95:
        sys.exit(f"{v}: only {100 * x['named_share']:.1f}% of the kernel's instructions on named symbols")
    if x["layers"]["driver"]["median"] <= 0:
        sys.exit(f"{v}: no instructions counted in ssdq.ko")
on = s["default"]["events"]["pci_nvme_mmio_doorbell_sq"]["median"]
off = s["unbatched"]["events"]["pci_nvme_mmio_doorbell_sq"]["median"]
if not (on <= 0.2 and off >= 0.9):
    sys.exit(f"SQ doorbell writes per I/O: {on:.3f} with ssdq's defaults (want <= 0.2), {off:.3f} "
             "with batching and shadow doorbells off (want >= 0.9)")
e0 = s["default"]["layers"]["entropy"]["median"]
e1 = s["entropy"]["layers"]["entropy"]["median"]
if e1 - e0 < 40:
    sys.exit(f"entropy layer per I/O: {e0:.1f} with add_random=0, {e1:.1f} with add_random=1 (want >= 40 more)")
print(f"named {100 * s['default']['named_share']:.2f}%, SQ doorbells/IO {on:.3f} -> {off:.3f} unbatched, "
      f"entropy/IO {e0:.1f} -> {e1:.1f} with add_random=1, "
      f"I/O path {s['default']['layers']['I/O path']['median']:.0f} instructions/IO")
PY
