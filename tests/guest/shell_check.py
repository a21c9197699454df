#!/usr/bin/env python3
"""Drive `run.sh --shell` through a pseudo-terminal, as a developer would:
wait for the prompt, run lsmod and list the device node, exit. Prints the
session and exits 0 only if npu is loaded and /dev/accel/accel0 or
/dev/dri/renderD128 exists."""
import os
import pty
import select
import sys
import time

top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
kernel = sys.argv[1] if len(sys.argv) > 1 else "6.12"
pid, fd = pty.fork()
if pid == 0:
    os.execv("/bin/bash", ["bash", os.path.join(top, "tests/guest/run.sh"),
                           "--kernel", kernel, "--shell"])
buf = b""


def read_for(seconds, until=None):
    global buf
    end = time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            continue
        try:
            data = os.read(fd, 4096)
        except OSError:
            return False
        if not data:
            return False
        buf += data
        if until is not None and until in buf:
            return True
    return False


if not read_for(180, b"/ # "):
    print(buf.decode(errors="replace")[-2000:])
    print("shell_check: no shell prompt")
    sys.exit(1)
for cmd in (b"lsmod\r", b"ls /dev/accel /dev/dri\r", b"echo END-$((6*7))\r"):
    os.write(fd, cmd)
    read_for(20, b"END-42" if b"END" in cmd else b"/ # ")
os.write(fd, b"exit\r")
read_for(30)
os.waitpid(pid, 0)
out = buf.decode(errors="replace").replace("\r", "")
print(out[out.find("npu guest"):])
lines = out.splitlines()
loaded = any(line.startswith("npu ") for line in lines)
node = "accel0" in out or "renderD128" in out
sys.exit(0 if loaded and node and "END-42" in out else 1)
