#!/usr/bin/env python3
# Copyright nodefl authors. SPDX-License-Identifier: Apache-2.0
"""Footprint table of the Cortex-M images (docs/porting.md, "Cortex-M (bare metal)").

Usage: footprint-table.py BUILD_DIR RUN_LOG

For each footprint image nodefl-fp-<name>.elf in BUILD_DIR: flash (text +
data, from arm-none-eabi-size), the part of it that comes from MbedTLS's
archives (from the linker map), static RAM (data + bss, less the buffers
that are sized for the measurement: the arena, the stack reservation and
MbedTLS's heap), and the run-time figures the image printed under QEMU
(RUN_LOG: arena, stack and MbedTLS heap high-water marks).
"""
import re
import subprocess
import sys

IMAGES = [
    ("baseline", "board, start-up, newlib-nano, log sink"),
    ("session", "+ DeviceSession (framing, envelope codec, nanopb)"),
    ("hct", "+ FedWalk HCT role (FedWalk device role, no TLS)"),
    ("walk", "+ FedWalk HCT and walk roles (sealing), no TLS"),
    ("compare", "session + secure-comparison role (OT, sealing), no TLS"),
    ("tls", "session + DevicePump + TLS endpoint + credentials"),
]
MEASUREMENT_BUFFERS = ("g_arena_memory", "g_mbedtls_heap")


def size_of(elf):
    """text (code + read-only data + vectors), .data, .bss: the stack
    reservation, which Berkeley `size` would count as bss, is left out."""
    out = subprocess.run(["arm-none-eabi-size", "-A", elf], check=True, capture_output=True, text=True).stdout
    sections = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit():
            sections[parts[0]] = int(parts[1])
    data = sections.get(".data", 0)
    bss = sections.get(".bss", 0)
    flash_only = (".isr_vector", ".text", ".ARM.extab", ".ARM.exidx", ".preinit_array", ".init_array",
                  ".fini_array")
    text = sum(sections.get(name, 0) for name in flash_only)
    return text, data, bss


def symbol_sizes(elf):
    out = subprocess.run(["arm-none-eabi-nm", "-S", "-C", elf], check=True, capture_output=True, text=True).stdout
    sizes = {}
    for line in out.splitlines():
        parts = line.split(maxsplit=3)
        if len(parts) == 4:
            sizes[parts[3]] = int(parts[1], 16)
    return sizes


def mbedtls_flash(map_path):
    """Bytes of .text/.rodata/.data input sections taken from libmbed*.a."""
    total = 0
    pending = None
    in_map = False
    for line in open(map_path, encoding="utf-8", errors="replace"):
        if line.startswith("Linker script and memory map"):
            in_map = True
            continue
        if not in_map:
            continue
        m = re.match(r"^ (\.(?:text|rodata|data)\S*)\s*$", line)
        if m:
            pending = m.group(1)
            continue
        m = re.match(r"^ (\.(?:text|rodata|data)\S*)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S+)", line)
        if m and (m.group(1) or pending):
            if "libmbed" in m.group(4) and int(m.group(2), 16) != 0:
                total += int(m.group(3), 16)
        pending = None
    return total


def main():
    build, log = sys.argv[1], sys.argv[2]
    runtime = {}
    for line in open(log, encoding="utf-8", errors="replace"):
        m = re.search(r"footprint (\S+): arena high-water (\d+) bytes; stack high-water (\d+) bytes; "
                      r"MbedTLS heap high-water (\d+)", line)
        if m:
            runtime[m.group(1)] = tuple(int(x) for x in m.group(2, 3, 4))
    names = {"hct": "fedwalk-hct", "walk": "fedwalk-hct+walk"}
    print("| image | what it links | flash (text+data) | of which MbedTLS | static RAM (data+bss) "
          "| arena high-water | stack high-water | MbedTLS heap high-water |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for image, what in IMAGES:
        elf = f"{build}/nodefl-fp-{image}.elf"
        text, data, bss = size_of(elf)
        syms = symbol_sizes(elf)
        # The stack reservation is the .stack section, outside data and
        # bss; the buffers sized for the measurement are in bss and left out
        # (their used part is the run-time columns).
        buffers = sum(v for k, v in syms.items() if k.endswith(MEASUREMENT_BUFFERS))
        arena, stack, heap = runtime.get(names.get(image, image), (None, None, None))
        fmt = lambda v: "n/a" if v is None else f"{v:,}"
        print(f"| {image} | {what} | {text + data:,} | {mbedtls_flash(elf[:-4] + '.map'):,} "
              f"| {data + bss - buffers:,} | {fmt(arena)} | {fmt(stack)} | {fmt(heap)} |")


if __name__ == "__main__":
    main()
