#!/usr/bin/env python3
# Folds `perf script` output by thread: each function's inclusive and self share of one
# thread's samples (perf report's children view, for one thread, with Swift names
# demangled). Usage: perf script -i perf.data | bench/perf-fold.py THREAD [regex]
import sys, re, collections, subprocess
comm = sys.argv[1]; pat = re.compile(sys.argv[2]) if len(sys.argv) > 2 else None
incl = collections.Counter(); selfc = collections.Counter(); total = 0; allsamples = 0
cur = None; frames = []
def flush():
    global total
    if cur is None: return
    if cur == comm:
        total += 1
        seen = set()
        for i, f in enumerate(frames):
            if i == 0: selfc[f] += 1
            if f not in seen:
                seen.add(f); incl[f] += 1
for line in sys.stdin:
    if not line.strip():
        flush(); cur = None; frames = []; continue
    if not line.startswith((' ', '\t')):
        allsamples += 1
        cur = line.split()[0]; frames = []
    else:
        parts = line.strip().split(None, 1)
        if len(parts) == 2:
            sym = re.sub(r'\+0x[0-9a-f]+$', '', parts[1].split(' (')[0])
            frames.append(sym)
flush()
names = [s for s, _ in incl.most_common(400)]
dem = subprocess.run(['swift', 'demangle', '--simplified', '--compact'], input='\n'.join(names), capture_output=True, text=True).stdout.split('\n')
m = dict(zip(names, dem))
print("samples: %d of %s, %d in all" % (total, comm, allsamples))
for s, c in incl.most_common(400):
    d = m.get(s, s)
    if pat and not pat.search(d): continue
    print("%6.2f%% %6.2f%%  %s" % (100.0 * c / total, 100.0 * selfc[s] / total, d[:170]))
