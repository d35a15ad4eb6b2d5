#!/usr/bin/env python3
"""Which pages of a running program's own executable are resident, by ELF section, and its
code pages by the module of the first symbol on each page (Swift's mangled names carry it).

usage (as root, or as the program's owner): doc/resident-pages.py PID [UNSTRIPPED_COPY]
The unstripped copy (the build's own binary, same layout) names the code pages' symbols.
"""
import bisect, collections, re, struct, subprocess, sys

pid = int(sys.argv[1])
exe = subprocess.check_output(["readlink", f"/proc/{pid}/exe"], text=True).strip()
symbols_from = sys.argv[2] if len(sys.argv) > 2 else exe

mappings = []
for line in open(f"/proc/{pid}/maps"):
    fields = line.split()
    if len(fields) >= 6 and fields[5] == exe:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        mappings.append((start, end, int(fields[2], 16)))
base = mappings[0][0] - mappings[0][2]

sections = []
for line in subprocess.check_output(["readelf", "-SW", exe], text=True).splitlines():
    m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)", line)
    if m and int(m.group(2), 16):
        sections.append((int(m.group(2), 16), int(m.group(3), 16), m.group(1)))
sections.sort()

symbols = []
for line in subprocess.check_output(["nm", "-n", "--defined-only", symbols_from], text=True, errors="replace").splitlines():
    fields = line.split(None, 2)
    if len(fields) == 3 and fields[1] in "tTwW":
        symbols.append((int(fields[0], 16), fields[2]))
addresses = [s[0] for s in symbols]

def section_of(address):
    for start, size, name in sections:
        if start <= address < start + size:
            return name
    return "(between sections)"

def module_of(name):
    m = re.match(r"\$s(\d+)", name)
    if m:
        n = int(m.group(1))
        return name[2 + len(m.group(1)):2 + len(m.group(1)) + n]
    if name.startswith("$ss") or name.startswith("swift_") or name.startswith("_ZN5swift"):
        return "Swift runtime and standard library"
    if name.startswith(("CF", "_CF", "__CF")):
        return "CoreFoundation"
    if re.search(r"_7\d$", name) or name.startswith(("u_", "ucol_", "uloc_", "ures_", "udata_", "_ZN6icu_")):
        return "ICU"
    return "other C and C++"

file_pages, copied_pages, code_pages = collections.Counter(), collections.Counter(), collections.Counter()
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for start, end, _ in mappings:
        pagemap.seek(start // 4096 * 8)
        entries = pagemap.read((end - start) // 4096 * 8)
        for i in range((end - start) // 4096):
            entry = struct.unpack_from("<Q", entries, i * 8)[0]
            if not entry >> 63 & 1:
                continue
            address = start + i * 4096 - base
            section = section_of(address)
            # Bit 61: a page of the file (or shared); clear, a private copy made on write.
            (file_pages if entry >> 61 & 1 else copied_pages)[section] += 4
            if section == ".text":
                j = bisect.bisect_right(addresses, address) - 1
                code_pages[module_of(symbols[j][1]) if j >= 0 else "?"] += 4

for title, counts in (("resident file pages, KiB", file_pages), ("private copies, KiB", copied_pages),
                      (".text pages by module, KiB", code_pages)):
    print(f"{title}: {sum(counts.values())}")
    for name, kib in counts.most_common(12):
        print(f"  {kib:7d}  {name}")
