#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""libnpu's files must form a DAG: each file uses only files below it.
So must npu.ko's.

    file-dag.py OBJDIR           (OBJDIR: build/lib/obj, the library's objects)
    file-dag.py --driver OBJDIR  (OBJDIR: build/kmod/<release>/driver)

For each lib/*.c object, which other objects' symbols it uses (nm: an
undefined symbol of one object defined by another). LAYERS is the order,
bottom first; an edge from a file to a file at or above it is "upward".
Every upward edge closes a cycle or would; one listed in UPWARD prints
as TODO (none is listed today), one not listed fails, and a listed one
that no longer exists fails too (the ratchet only turns one way). Then
the cycles (strongly connected components) are printed for the record.
Output is TAP. With --driver, DRIVER_LAYERS orders the driver's objects
(Documentation/driver/npu.rst, Source layout) and no upward edge is known.

What this cannot see are calls through function pointers. The ones that
go up are the hook tables of npu_core.h (stream capture, command trace,
work-completed callbacks): a layer above installs its table when it is
switched on, and the code below knows only the table's type.
"""
import collections
import glob
import os
import subprocess
import sys

LAYERS = [
    "npu_json",      # JSON string escaping
    "npu_cmd",       # the command writer: every packet of include/npu_hw.h
    "npu_error",     # per-thread errors, status strings, device loss
    "npu_outq",      # device printf text waiting for stdout
    "npu_builtin",   # the built-in kernels' table
    "npu_handle",    # handle registry of streams and events
    "npu_thread",    # helper threads, stopping them at teardown
    "npu_device",    # enumeration, opening, properties, current device
    "npu_timeline",  # timelines, completion words, syncobj waits
    "npu_fault",     # failed jobs to sticky errors
    "npu_queue",     # kernel queues, the SUBMIT ioctl
    "npu_batch",     # direct and deferred submission, the submit thread
    "npu_uq",        # user queues: ring, doorbell, memory signals, bridges
    "npu_wait",      # waits on a point: spin on the word, then sleep
    "npu_job",       # jobs in a stream's command ring, legacy-stream rules
    "npu_stream",    # streams, events, host functions
    "npu_mem",       # allocations, copies, fills, stream memory operations
    "npu_module",    # code objects
    "npu_printf",    # device printf
    "npu_kprofile",  # user-kernel profiles
    "npu_trace",     # command trace, Chrome JSON, roofline
    "npu_ukernel",   # launch of user kernels
    "npu_builtin_code",  # npu_launch: the built-in kernels as code
    "npu_graph",     # graphs and nodes
    "npu_graph_capture", # stream capture into graphs
    "npu_graph_exec",    # instantiation and launch of graphs
    "npu_tune",      # auto-tuning
    "npu_tunespace", # tuning over parameter spaces
    "npu_unload",    # teardown at exit and dlclose: knows every layer
]

# npu.ko's files, bottom first (npu_base.h, the shared structures, has no
# object of its own).
DRIVER_LAYERS = [
    "npu_trace",        # tracepoints
    "npu_regs",         # register access
    "npu_mmu",          # contexts, page tables, mappings, a file's contexts
    "npu_ring",         # rings, hardware fences, ring and error irqs, faults
    "npu_userq_desc",   # a user queue's descriptor, commands, reference
    "npu_debugfs",      # debugfs files
    "npu_sysfs",        # sysfs attributes
    "npu_gem",          # buffer objects
    "npu_userq_event",  # user-queue events, waits, watchdog, signals
    "npu_job",          # queues, SUBMIT, the scheduler backend
    "npu_userq",        # user queues: create, destroy, query, doorbells
    "npu_ctx",          # extra contexts, BO_MAP, BO_UNMAP
    "npu_drv",          # module, PCI probe, MSI-X vectors, ioctl table
]

# Upward edges of today (from, to): why they exist. The capture and the
# trace reach the layers below through hook tables (npu_core.h), so none
# is left; an entry here prints as TODO, never as a pass.
UPWARD = {}


def edges_of(objdir):
    defs, uses = {}, collections.defaultdict(set)
    for o in sorted(glob.glob(os.path.join(objdir, "*.o"))):
        name = os.path.basename(o)[:-2]
        out = subprocess.run(["nm", o], capture_output=True, text=True,
                             check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRGSVW":
                defs[f[2]] = name
            elif len(f) == 2 and f[0] == "U":
                uses[name].add(f[1])
    edges = collections.defaultdict(set)
    for o, syms in uses.items():
        for s in syms:
            d = defs.get(s)
            if d and d != o:
                edges[(o, d)].add(s)
    return set(defs.values()) | set(uses), edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components with more than one file."""
    succ = collections.defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, on, stack, out, n = {}, {}, set(), [], [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    args = sys.argv[1:]
    layers, upward = LAYERS, UPWARD
    if args[:1] == ["--driver"]:
        args = args[1:]
        layers, upward = DRIVER_LAYERS, {}
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("usage: file-dag.py [--driver] OBJDIR", file=sys.stderr)
        return 2
    nodes, edges = edges_of(args[0])
    rank = {name: i for i, name in enumerate(layers)}
    t, failed = 0, 0
    print("TAP version 13")
    unknown = sorted(nodes - set(rank))
    t += 1
    if unknown:
        failed += 1
        print(f"not ok {t} - every object has a layer (missing: {' '.join(unknown)})")
    else:
        print(f"ok {t} - every object has a layer ({len(nodes)} objects)")
    for (a, b) in sorted(edges, key=lambda e: (rank.get(e[0], 99), rank.get(e[1], 99))):
        if rank.get(a, 99) > rank.get(b, 99):
            continue
        t += 1
        syms = " ".join(sorted(edges[(a, b)]))
        if (a, b) in upward:
            print(f"not ok {t} - {a} -> {b}: upward ({upward[(a, b)]}: {syms}) "
                  "# TODO issue 15, one submission layer")
        else:
            failed += 1
            print(f"not ok {t} - {a} -> {b}: upward, not a known one ({syms})")
    for (a, b) in sorted(upward):
        if (a, b) not in edges:
            t += 1
            failed += 1
            print(f"not ok {t} - {a} -> {b} is gone: take it off UPWARD")
    down = sum(1 for (a, b) in edges if rank.get(a, 99) > rank.get(b, 99))
    t += 1
    print(f"ok {t} - {down} edges point down the layers")
    for comp in sccs(nodes, edges):
        print(f"# cycle among: {' '.join(comp)}")
    print(f"1..{t}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
