# hotset.py PORT ADMIN PASSES ROWS [noload]: against a tiered kura node, writes ROWS rows
# of 4 KiB of random bytes (k00000, k00001, ...), reads the first half three times over
# (phase 1: they move to the fast tier until its device is full), then reads the second
# half PASSES times over (phase 2: a new hot set). After each pass it prints the share of
# that pass's reads the fast tier served, the rows on it, the budget's device cap and the
# fast device's free space, from /tiers on ADMIN. With noload it skips the writes and
# phase 1. Plain sockets: no client library needed.
import json, os, socket, sys, time, urllib.request

port, admin, passes, rows = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
load = len(sys.argv) < 6
sock = socket.create_connection(("127.0.0.1", port))
reader = sock.makefile("rb")


def cmd(*args):
    """Sends one RESP command and returns its error line, or None."""
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    line = reader.readline()
    if line[:1] == b"$":
        n = int(line[1:])
        if n >= 0:
            reader.read(n + 2)
    elif line[:1] == b"-":
        return line
    return None


def tiers():
    return json.load(urllib.request.urlopen("http://%s/tiers" % admin))


def read(lo, hi):
    """Reads keys lo..hi-1 once; returns the fast tier's share of them and /tiers after."""
    before = tiers()["tiers"]
    for i in range(lo, hi):
        cmd("GET", "k%05d" % i)
    after = tiers()
    fast = after["tiers"][0]["reads"] - before[0]["reads"]
    slow = after["tiers"][1]["reads"] - before[1]["reads"]
    return fast / max(1, fast + slow), after


if load:
    errors = sum(1 for i in range(rows) if cmd("SET", "k%05d" % i, os.urandom(4096)))
    print("loaded %d rows, %d errors" % (rows, errors), flush=True)
    for p in range(3):
        share, t = read(0, rows // 2)
        time.sleep(3)
        print("phase 1 pass %d: fast share %.2f, fast rows %d, cap %s"
              % (p, share, t["tiers"][0]["keys"], t.get("device_cap_bytes", "-")), flush=True)
start = time.time()
for p in range(passes):
    share, t = read(rows // 2, rows)
    time.sleep(3)
    print("phase 2 pass %d (%.0f s): fast share %.2f, fast rows %d, cap %s, fast device free %d"
          % (p, time.time() - start, share, t["tiers"][0]["keys"], t.get("device_cap_bytes", "-"),
             t["tiers"][0]["disk_available_bytes"]), flush=True)
