#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Host side of the test VM's wake-ups: what a sleeping guest cannot do.

vm.sh starts this beside QEMU. It follows the guest's console log and acts
on lines the guest prints before it goes to sleep, through QEMU's QMP
socket:

  ssdq-qmp: wakeup        wait until QEMU reports the guest suspended (S3),
                          then system_wakeup
  ssdq-qmp: powerbutton   press the ACPI power button (system_powerdown)
                          every 2 s until the guest prints "ssdq-qmp: awake":
                          the wake event of suspend-to-idle, which keeps the
                          guest running (QEMU's RTC alarm wakes only S3)
  ssdq-qmp: qom-set ID PROPERTY VALUE
                          set a property of the device of that id (vm.sh:
                          dut, ref), e.g. the NVMe controller's
                          smart_critical_warning, which makes it raise a
                          SMART asynchronous event; VALUE is sent as a
                          number when it is one

Each request is answered once, in order; what was done is logged, one line
each, to the file named by the third argument (vm.sh: qmp-agent.log).

Besides, every 30 s it reads every vCPU's registers ("info registers -a"),
which makes each vCPU thread leave its loop once: QEMU 7.2's multi-threaded
TCG once left both vCPUs of an idle guest asleep for 14 minutes (its timer
interrupts never came; rcu_preempt stall reports once they woke), until such
a command from the host woke them.

  qmp-agent.py CONSOLE_LOG QMP_SOCKET LOG
"""
import json
import socket
import sys
import time


class Qmp:
    def __init__(self, path):
        self.sock = None
        self.path = path
        self.buf = b""

    def connect(self, deadline):
        while self.sock is None:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.path)
                self.sock = s
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        self.sock.settimeout(10)
        self.read_reply()  # the greeting
        self.cmd("qmp_capabilities")

    def read_reply(self):
        while True:
            while b"\n" not in self.buf:
                data = self.sock.recv(4096)
                if not data:
                    raise OSError("QMP socket closed")
                self.buf += data
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def cmd(self, name, args=None):
        msg = {"execute": name}
        if args:
            msg["arguments"] = args
        self.sock.sendall(json.dumps(msg).encode() + b"\n")
        return self.read_reply()


def main():
    console, sock_path, log_path = sys.argv[1:4]
    qmp = Qmp(sock_path)
    log = open(log_path, "a", buffering=1)
    pos = 0
    partial = b""
    pending = []
    last_press = 0.0
    last_kick = time.monotonic()
    while True:
        if time.monotonic() - last_kick >= 30:
            last_kick = time.monotonic()
            try:
                if qmp.sock is None:
                    qmp.connect(time.monotonic() + 1)
                qmp.cmd("human-monitor-command",
                        {"command-line": "info registers -a"})
            except (OSError, ValueError):
                qmp.sock = None
        # Only what was appended since the last look: a debug boot's
        # console runs to megabytes.
        try:
            with open(console, "rb") as f:
                f.seek(pos)
                data = f.read()
        except FileNotFoundError:
            data = b""
        pos += len(data)
        lines = (partial + data).split(b"\n")
        partial = lines.pop()
        for ln in lines:
            ln = ln.decode(errors="replace")
            if "ssdq-qmp:" not in ln:
                continue
            # One word; the kernel's console output may follow on the line.
            words = ln.split("ssdq-qmp:", 1)[1].split()
            req = words[0] if words else ""
            if req == "qom-set":
                req = tuple(words[:4])
            if req == "awake":
                if pending and pending[0] == "powerbutton":
                    pending.pop(0)
                    log.write("guest awake: power button released\n")
            else:
                pending.append(req)
        if pending:
            if qmp.sock is None:
                qmp.connect(time.monotonic() + 30)
            req = pending[0]
            if req == "wakeup":
                st = qmp.cmd("query-status").get("return", {})
                if st.get("status") == "suspended":
                    log.write("guest suspended: system_wakeup -> %s\n"
                              % json.dumps(qmp.cmd("system_wakeup")))
                    pending.pop(0)
            elif req == "powerbutton":
                now = time.monotonic()
                if now - last_press >= 2:
                    last_press = now
                    log.write("system_powerdown -> %s\n"
                              % json.dumps(qmp.cmd("system_powerdown")))
            elif isinstance(req, tuple) and len(req) == 4:
                value = req[3]
                try:
                    value = int(value, 0)
                except ValueError:
                    pass
                args = {"path": "/machine/peripheral/" + req[1],
                        "property": req[2], "value": value}
                log.write("qom-set %s -> %s\n" % (json.dumps(args),
                          json.dumps(qmp.cmd("qom-set", args))))
                pending.pop(0)
            else:
                log.write("unknown request '%s', ignored\n" % (req,))
                pending.pop(0)
        time.sleep(0.25)


if __name__ == "__main__":
    try:
        main()
    except (OSError, ValueError) as e:
        # QEMU went away (the VM ended): nothing left to wake.
        print("qmp-agent: %s" % e, file=sys.stderr)
