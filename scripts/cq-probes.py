#!/usr/bin/env python3
"""Define the swiftqueues USDT probes of a built library as named uprobe events.

`perf probe -x LIB sdt_swiftqueues:NAME` attaches a probe with its arguments as numbers
(arg1=94730899262608); this script reads the probe notes (`readelf -n`) and writes uprobe
events with names and types instead (label="com.example.db" item=0x55... kind=1), through
tracefs, so `perf record -e swiftqueues:task_start` shows queue labels. Needs root.

  scripts/cq-probes.py add LIB [NAME...]   define swiftqueues:NAME (all probes by default)
  scripts/cq-probes.py remove              remove every swiftqueues:* uprobe event (whoever added it)
  scripts/cq-probes.py list LIB            print the definitions without writing them

LIB is the shared library or a program linked with the static library, PIE or not: the notes
give virtual addresses, which the ELF program headers (PT_LOAD) turn into the file offsets a
uprobe takes (they differ in a program linked at a fixed address, -no-pie).

A probe that sits at several places (task_enqueue: cq_async_f and cq_group_async_f) gets
events NAME, NAME_1, ...; `-e 'swiftqueues:task_enqueue*'` records them all. The semaphore is
passed along, so the runtime computes the arguments only while an event is enabled.
"""
import os
import re
import struct
import subprocess
import sys

# argument names and fetch types per probe, in the order CQ_PROBE passes them
# (Sources/CQueueCore/platform/probes_internal.h)
ARGS = {
    "task_enqueue": [("label", "string"), ("item", "x64"), ("prio", "u32")],
    "task_start": [("label", "string"), ("item", "x64"), ("kind", "u32")],
    "task_finish": [("label", "string"), ("item", "x64")],
    "steal": [("victim", "u32"), ("thief", "u32"), ("prio", "u32")],
    "worker_park": [("proc", "u32"), ("band", "u32")],
    "worker_unpark": [("proc", "u32"), ("band", "u32")],
    "spare_start": [("band", "u32"), ("spawned", "u32")],
    "thread_limit": [("threads", "u32"), ("limit", "u32")],
    "source_event": [("kind", "u32"), ("data", "u64"), ("source", "x64"), ("label", "string")],
    "timer_fire": [("kind", "u32"), ("count", "u64")],
    "operation_state": [("name", "string"), ("state", "s32")],
    "label_change": [("name", "string")],
}

REG = {  # x86-64 register names as the uprobe fetch syntax spells them
    "rax": "ax", "eax": "ax", "ax": "ax", "al": "ax",
    "rbx": "bx", "ebx": "bx", "bx": "bx", "bl": "bx",
    "rcx": "cx", "ecx": "cx", "cx": "cx", "cl": "cx",
    "rdx": "dx", "edx": "dx", "dx": "dx", "dl": "dx",
    "rsi": "si", "esi": "si", "si": "si", "sil": "si",
    "rdi": "di", "edi": "di", "di": "di", "dil": "di",
    "rbp": "bp", "ebp": "bp", "bp": "bp",
    "rsp": "sp", "esp": "sp", "sp": "sp",
}
for i in range(8, 16):
    for suffix in ("", "d", "w", "b"):
        REG[f"r{i}{suffix}"] = f"r{i}"

TRACEFS = "/sys/kernel/tracing" if os.path.isdir("/sys/kernel/tracing/events") else \
    "/sys/kernel/debug/tracing"


def reg(name):
    return "%" + REG[name.lstrip("%")]


def fetch(lib, spec, kind):
    """One note argument ("8@%r15", "-4@%eax", "8@-24(%rbp)", "4@$3") as a fetch argument;
    None for a global ("4@8+sym(%rip)"), which the event then leaves out."""
    size, _, operand = spec.partition("@")
    if kind != "string" and kind != "x64":
        bits = 8 * abs(int(size))
        kind = f"{'s' if size.startswith('-') else 'u'}{bits}"
    m = re.fullmatch(r"\$(-?\d+)", operand)
    rip = re.fullmatch(r"(-?\d+)?\+?([A-Za-z_][\w.]*)?(?:([+-]\d+))?\(%rip\)", operand)
    if m:
        base = "\\" + m.group(1)
    elif rip:
        return None  # a global's field: uprobes fetch only file-backed memory by offset
    else:
        m = re.fullmatch(r"(-?\d*)\(%(\w+)\)", operand)
        if m:
            off = int(m.group(1) or "0")
            base = f"{off:+d}({reg(m.group(2))})"
        else:
            base = reg(operand)
    if kind == "string":
        return f"+0({base}):string"
    return f"{base}:{kind}"


def notes(lib):
    out = subprocess.run(["readelf", "-n", lib], check=True, capture_output=True,
                         text=True).stdout
    probe = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("Provider:"):
            probe = {"provider": line.split()[1]}
        elif line.startswith("Name:"):
            probe["name"] = line.split()[1]
        elif line.startswith("Location:"):
            m = re.search(r"Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)",
                          line)
            probe["loc"], probe["sem"] = int(m.group(1), 16), int(m.group(3), 16)
        elif line.startswith("Arguments:"):
            probe["args"] = line.split()[1:]
            if probe.get("provider") == "swiftqueues":
                yield dict(probe)


PT_LOAD = 1


def load_segments(lib):
    """The PT_LOAD program headers of an ELF file: (p_vaddr, p_offset, p_filesz, p_memsz)."""
    with open(lib, "rb") as f:
        ident = f.read(16)
        if len(ident) < 16 or ident[:4] != b"\x7fELF":
            sys.exit(f"{lib}: not an ELF file")
        bits = {1: 32, 2: 64}.get(ident[4])
        order = {1: "<", 2: ">"}.get(ident[5])
        if bits is None or order is None:
            sys.exit(f"{lib}: unknown ELF class or byte order")
        # the header after e_ident: type, machine, version, entry, phoff, shoff, flags, ehsize,
        # phentsize, phnum, ...
        eh = order + ("HHIQQQIHHH" if bits == 64 else "HHIIIIIHHH")
        head = struct.unpack(eh, f.read(struct.calcsize(eh)))
        phoff, phentsize, phnum = head[4], head[8], head[9]
        if bits == 64:
            ph = order + "IIQQQQQQ"  # type, flags, offset, vaddr, paddr, filesz, memsz, align
        else:
            ph = order + "IIIIIIII"  # type, offset, vaddr, paddr, filesz, memsz, flags, align
        segments = []
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            e = struct.unpack(ph, f.read(struct.calcsize(ph)))
            if bits == 64:
                p_type, p_offset, p_vaddr, p_filesz, p_memsz = e[0], e[2], e[3], e[5], e[6]
            else:
                p_type, p_offset, p_vaddr, p_filesz, p_memsz = e[0], e[1], e[2], e[4], e[5]
            if p_type == PT_LOAD:
                segments.append((p_vaddr, p_offset, p_filesz, p_memsz))
    return segments


def file_offset(lib, segments, vaddr, what):
    """A virtual address's offset in the file, which uprobes want for both the probe and its
    reference counter (the semaphore): the PT_LOAD segment that maps it says. In a shared
    library or a PIE program built as usual the two are equal for the text; in a program
    linked at a fixed address (-no-pie) they differ by the load address (0x400000)."""
    for p_vaddr, p_offset, p_filesz, p_memsz in segments:
        if p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
        if p_vaddr <= vaddr < p_vaddr + p_memsz:
            sys.exit(f"{lib}: {what} at {vaddr:#x} is in no file page (.bss): uprobes cannot "
                     "reach it")
    sys.exit(f"{lib}: {what} at {vaddr:#x} is in no loaded segment")


def definitions(lib, wanted):
    lib = os.path.realpath(lib)
    segments = load_segments(lib)
    seen = {}
    for p in notes(lib):
        name = p["name"]
        if wanted and name not in wanted:
            continue
        n = seen.get(name, 0)
        seen[name] = n + 1
        event = name if n == 0 else f"{name}_{n}"
        fetched = ((an, fetch(lib, spec, kind))
                   for (an, kind), spec in zip(ARGS.get(name, []), p.get("args", [])))
        args = " ".join(f"{an}={f}" for an, f in fetched if f)
        # the notes give virtual addresses; a uprobe takes file offsets (probe and semaphore)
        loc = file_offset(lib, segments, p["loc"], f"probe {name}")
        sem = file_offset(lib, segments, p["sem"], f"semaphore of {name}")
        yield f"p:swiftqueues/{event} {lib}:{loc:#x}({sem:#x}) {args}"


def write_event(line):
    # one write(2) per definition, no seek (tracefs refuses Python's append-mode seek)
    fd = os.open(f"{TRACEFS}/uprobe_events", os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("add", "remove", "list"):
        sys.exit(__doc__)
    if sys.argv[1] != "remove" and len(sys.argv) < 3:
        sys.exit(f"{sys.argv[1]}: which library or program? ({sys.argv[0]} {sys.argv[1]} LIB [NAME...])")
    cmd = sys.argv[1]
    if cmd == "remove":
        with open(f"{TRACEFS}/uprobe_events") as f:
            lines = [l.split()[0].split(":", 1)[1] for l in f if l.startswith("p:swiftqueues/")]
        # One event may hold several definitions (the same name added for two binaries: the
        # kernel lists each); one removal takes them all.
        events = list(dict.fromkeys(lines))
        for e in events:
            try:
                write_event(f"-:{e}")
            except FileNotFoundError:
                pass  # gone meanwhile (another remove)
        print(f"removed {len(events)} events")
        return
    defs = list(definitions(sys.argv[2], set(sys.argv[3:])))
    if cmd == "list":
        print("\n".join(defs))
        return
    status = 0
    for d in defs:
        try:
            write_event(d)
            print(d.split()[0][2:])
        except OSError as e:
            print(f"cannot define {d}: {e} (see {TRACEFS}/error_log)", file=sys.stderr)
            status = 1
    sys.exit(status)


if __name__ == "__main__":
    main()
