#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Run a guest through a live migration (Documentation/testing.rst,
"Migrating a running guest").

Used as tests/guest/run.sh's QEMU:

    QEMU=tests/guest/qemu-migrate.py NPU_MIGRATE_AFTER=14 \\
        bash tests/guest/run.sh --kernel 6.12 --cmd 'lib_streams; lib_graph'

starts the real QEMU (NPU_MIGRATE_QEMU, default scripts/build-qemu.sh's)
with the runner's arguments and a QMP socket, migrates it after
NPU_MIGRATE_AFTER seconds into a file (exec:, QEMU 7.2 has no file:
migration), quits it, and continues the guest in a second QEMU started
with the same arguments and -incoming. The source's serial output is kept
in front of the destination's, with a line "@@MIGRATED" between them.
"""
import json
import os
import socket
import subprocess
import sys
import time

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
real = os.environ.get("NPU_MIGRATE_QEMU") or subprocess.run(
    ["bash", os.path.join(top, "scripts/build-qemu.sh")],
    stdout=subprocess.PIPE, check=True, text=True).stdout.split()[-1]
after = float(os.environ.get("NPU_MIGRATE_AFTER", "14"))
args = sys.argv[1:]
files = []
for a in args:
    if a.startswith("file:"):
        files.append(a[5:])
    elif a.startswith("file,") and "path=" in a:
        files.append(a.split("path=")[1].split(",")[0])
sock = "/tmp/npu-migrate-%d.qmp" % os.getpid()
state = "/tmp/npu-migrate-%d.bin" % os.getpid()


def log(msg):
    print("qemu-migrate: " + msg, file=sys.stderr, flush=True)


def qmp_connect():
    for _ in range(400):
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(sock)
            break
        except OSError:
            time.sleep(0.05)
    else:
        sys.exit("qemu-migrate: no QMP socket")
    f = s.makefile("rw")
    f.readline()

    def cmd(c, **a):
        f.write(json.dumps({"execute": c, "arguments": a}) + "\n")
        f.flush()
        while True:
            line = json.loads(f.readline())
            if "event" not in line:
                return line
    cmd("qmp_capabilities")
    return cmd


src = subprocess.Popen([real] + args +
                       ["-qmp", "unix:%s,server=on,wait=off" % sock])
cmd = qmp_connect()
time.sleep(after)
if src.poll() is not None:
    log("the guest ended before the migration")
    sys.exit(src.returncode or 3)
t0 = time.time()
r = cmd("migrate", uri="exec:cat > %s" % state)
status = None
while "return" in r:
    r = cmd("query-migrate")
    status = r.get("return", {}).get("status")
    if status in ("completed", "failed", "cancelled"):
        break
    time.sleep(0.05)
log("%s after %.2f s, downtime %s ms" % (status, time.time() - t0,
                                         r.get("return", {}).get("downtime")))
cmd("quit")
src.wait()
if os.path.exists(sock):
    os.unlink(sock)
if status != "completed":
    sys.exit(3)
saved = {p: open(p, "rb").read() for p in files if os.path.exists(p)}
dst = subprocess.Popen([real] + args + ["-incoming", "exec:cat %s" % state])
rc = dst.wait()
os.unlink(state)
for p, data in saved.items():
    rest = open(p, "rb").read() if os.path.exists(p) else b""
    with open(p, "wb") as f:
        f.write(data + b"\n@@MIGRATED\n" + rest)
log("destination exited with %d" % rc)
sys.exit(rc)
