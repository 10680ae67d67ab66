# join.py TRACE EXTENTS LAYOUT SECONDS TIER_READS: see io-trace.sh.
import bisect, collections, os, re, sys

trace, extents, layout, secs, tier_reads = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])

# Physical extents (512-byte sectors) of every file: (phys_start, phys_end, file, logical_start).
ext = []
cur = None
for line in open(extents):
    if line.startswith('== '):
        cur = os.path.basename(line[3:].strip())
        continue
    m = re.match(r'^\s*\d+:\s+(\d+)\.\.\s*(\d+):\s+(\d+)\.\.\s*(\d+):', line)
    if m and cur:
        lo, hi, plo, phi = map(int, m.groups())
        ext.append((plo, phi + 1, cur, lo))
ext.sort()
starts = [e[0] for e in ext]

# Block layout of every sstable: file -> sorted [(offset, end, kind)].
lay = collections.defaultdict(list)
for line in open(layout):
    p = line.split()
    if len(p) != 4:
        continue
    name, kind, off, n = os.path.basename(p[0]), p[1], int(p[2]), int(p[3])
    lay[name].append((off, off + n, kind))
for v in lay.values():
    v.sort()

def file_type(name):
    base = name.split('-', 1)[1] if '-' in name else name
    if base.endswith('.sst'):
        return 'sst'
    if base.endswith('.log'):
        return 'log'
    if base.startswith('MANIFEST'):
        return 'manifest'
    return 'other'

def kinds(name, off, end):
    v = lay.get(name)
    if not v:
        return ['sst?']
    out = []
    i = bisect.bisect_right(v, (off, float('inf'), '')) - 1
    i = max(i, 0)
    while i < len(v) and v[i][0] < end:
        if v[i][1] > off:
            out.append(v[i][2])
        i += 1
    return out or ['sst-gap']

count = collections.Counter()
nbytes = collections.Counter()
total = 0
for line in open(trace):
    m = re.search(r'(\d+),(\d+)\s+(\S+)\s+(\d+)\s+\(\S*\)\s+(\d+)\s+\+\s+(\d+)', line)
    if not m or 'R' not in m.group(3):
        continue
    sector, nsec = int(m.group(5)), int(m.group(6))
    size = 'small' if nsec * 512 <= 16384 else 'large'
    total += 1
    i = bisect.bisect_right(starts, sector) - 1
    if i < 0 or ext[i][1] <= sector:
        key = (size, 'unmapped', '')
    else:
        plo, phi, name, llo = ext[i]
        off = (llo + sector - plo) * 512
        ft = file_type(name)
        kind = ''
        if ft == 'sst':
            ks = sorted(set(kinds(name, off, off + nsec * 512)))
            kind = '+'.join(ks)
        key = (size, ft, kind)
    count[key] += 1
    nbytes[key] += nsec * 512

print('read requests: %d in %.0f s (%.1f a second)' % (total, secs, total / secs))
if tier_reads:
    print('slow-tier reads: %d (%.1f a second); requests per slow-tier read: %.3f' % (tier_reads, tier_reads / secs, total / tier_reads))
print('%-6s %-9s %-28s %9s %8s %10s%s' % ('size', 'file', 'block kinds', 'requests', 'share', 'MB', '  per slow-tier read' if tier_reads else ''))
for key, n in sorted(count.items(), key=lambda kv: -kv[1]):
    print('%-6s %-9s %-28s %9d %7.1f%% %10.1f%s' % (key[0], key[1], key[2], n, 100 * n / total, nbytes[key] / 1e6,
          '  %.3f' % (n / tier_reads) if tier_reads else ''))
