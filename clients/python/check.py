"""redis-py's part of kura's client matrix (clients/matrix_test.go runs it).

Usage: check.py ADDR OTHER PREFIX

Runs every check of the matrix through redis-py's typed API against the server at ADDR
(host:port; OTHER is another node of the same cluster, or ADDR again for a single
server) and prints one line per variant and check, in the matrix's canonical form:
"VARIANT CHECK name=value ...", or "VARIANT CHECK ERROR message" when the check raised.
clients/doc.go describes the form and the checks; testdata/expected.txt holds the lines
every client must print against both kura and redis-server.
"""

import sys
import time

import redis

# Each variant is a way users construct the client: redis-py's defaults (RESP3 since
# redis-py 6) and the two protocols named explicitly.
VARIANTS = [("resp3-default", {}), ("resp3", {"protocol": 3}), ("resp2", {"protocol": 2})]


def text(v):
    """A reply as the matrix prints it: nil, a string, an integer, a list or a map."""
    if v is None:
        return "nil"
    if v is True:
        return "1"
    if v is False:
        return "0"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(text(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(k + ":" + text(v[k]) for k in sorted(v)) + "}"
    return str(v)


def ok(v):
    """SET's reply: redis-py turns +OK into True and a null into None."""
    return "OK" if v is True else text(v)


def within(v, lo, hi):
    """A TTL prints as the range it must fall in, so that both servers print the same."""
    return "%d..%d" % (lo, hi) if isinstance(v, int) and lo <= v <= hi else text(v)


def strings(r, other, p):
    r.delete(p + "k1", p + "k2", p + "k3", p + "none")
    out = [("set", ok(r.set(p + "k1", "v1"))), ("get", text(r.get(p + "k1"))),
           ("get_other", text(other.get(p + "k1"))), ("get_missing", text(r.get(p + "none"))),
           ("mset", ok(r.mset({p + "k2": "a", p + "k3": "b"}))),
           ("mget", text(r.mget([p + "k1", p + "k2", p + "k3", p + "none"]))),
           ("exists", text(r.exists(p + "k1", p + "k2", p + "none"))),
           ("del", text(r.delete(p + "k2", p + "none"))), ("exists_after", text(r.exists(p + "k2")))]
    return out


def set_options(r, other, p):
    r.delete(p + "k", p + "none")
    return [("nx", ok(r.set(p + "k", "v1", nx=True))), ("nx_again", ok(r.set(p + "k", "v2", nx=True))),
            ("xx", ok(r.set(p + "k", "v3", xx=True))), ("xx_missing", ok(r.set(p + "none", "x", xx=True))),
            ("get_option", text(r.set(p + "k", "v4", get=True))), ("value", text(r.get(p + "k")))]


def hashes(r, other, p):
    h = p + "h"
    r.delete(h, p + "none")
    return [("hset", text(r.hset(h, mapping={"f1": "v1", "f2": "v2"}))),
            ("hset_update", text(r.hset(h, "f1", "x"))), ("hget", text(r.hget(h, "f1"))),
            ("hget_missing", text(r.hget(h, "nofield"))), ("hgetall", text(r.hgetall(h))),
            ("hlen", text(r.hlen(h))), ("hdel", text(r.hdel(h, "f2", "nofield"))),
            ("hlen_after", text(r.hlen(h))), ("hgetall_other", text(other.hgetall(h))),
            ("hgetall_missing", text(r.hgetall(p + "none")))]


def ttls(r, other, p):
    k, px = p + "k", p + "px"
    r.delete(k, px, p + "none")
    out = [("set_px", ok(r.set(px, "v", px=2000)))]
    start = time.monotonic()
    out += [("pttl", within(r.pttl(px), 1, 2000)), ("set", ok(r.set(k, "v"))),
            ("ttl_none", text(r.ttl(k))), ("expire", text(r.expire(k, 100))),
            ("ttl", within(r.ttl(k), 1, 100)), ("persist", text(r.persist(k))),
            ("ttl_persisted", text(r.ttl(k))), ("persist_again", text(r.persist(k))),
            ("set_ex", ok(r.set(k, "v", ex=50))), ("ttl_ex", within(r.ttl(k), 1, 50)),
            ("ttl_missing", text(r.ttl(p + "none"))), ("expire_missing", text(r.expire(p + "none", 10)))]
    time.sleep(max(0.0, 2.3 - (time.monotonic() - start)))
    out += [("expired", text(r.get(px))), ("ttl_expired", text(r.ttl(px)))]
    return out


def scan(r, other, p):
    want = {"%sk%02d" % (p, i) for i in range(40)}
    r.mset({k: "v" for k in want})
    r.hset(p + "h", "f", "v")
    want.add(p + "h")
    got = list(r.scan_iter(match=p + "*", count=7))
    return [("keys", text(len(set(got)))), ("same", text(set(got) == want))]


def counters(r, other, p):
    n, s = p + "n", p + "s"
    r.delete(n, s, p + "none")
    out = [("incr", text(r.incr(n))), ("incr_again", text(r.incr(n))), ("incrby", text(r.incrby(n, 10))),
           ("decr", text(r.decr(n))), ("get", text(r.get(n))), ("get_other", text(other.get(n)))]
    r.set(s, "abc")
    try:
        out.append(("incr_text", text(r.incr(s))))
    except redis.ResponseError:
        out.append(("incr_text", "error"))
    out.append(("decr_missing", text(r.decr(p + "none"))))
    return out


def pipeline(r, other, p):
    k, n, h = p + "k", p + "n", p + "h"
    r.delete(k, n, h, p + "none")
    pipe = r.pipeline(transaction=False)
    pipe.set(k, "v").incr(n).incr(n).get(k).hset(h, "f", "x").hget(h, "f").get(p + "none").delete(k)
    res = pipe.execute()
    res[0] = ok(res[0])
    return [("replies", text(res))]


def multi(r, other, p):
    """redis-py's default pipeline() wraps its commands in MULTI/EXEC; here all on one key."""
    n = p + "n"
    r.delete(n)
    pipe = r.pipeline()
    pipe.incr(n).incr(n).expire(n, 100).get(n)
    return [("replies", text(pipe.execute())), ("ttl", within(r.ttl(n), 1, 100))]


def proto(r, other, p):
    return [("resp", str(r.client_info()["resp"]))]


CHECKS = [("proto", proto), ("strings", strings), ("set_options", set_options), ("hashes", hashes),
          ("ttl", ttls), ("scan", scan), ("counters", counters), ("pipeline", pipeline), ("multi", multi)]


def client(addr, kw):
    host, port = addr.rsplit(":", 1)
    return redis.Redis(host=host, port=int(port), decode_responses=True, socket_timeout=20, **kw)


def main():
    addr, other_addr, prefix = sys.argv[1:4]
    for variant, kw in VARIANTS:
        r, other = client(addr, kw), client(other_addr, kw)
        for name, check in CHECKS:
            p = "%s:%s:%s:" % (prefix, variant, name)
            try:
                line = " ".join("%s=%s" % kv for kv in check(r, other, p))
            except Exception as e:  # each check reports on its own: one failing hides no other
                line = "ERROR " + (type(e).__name__ + ": " + str(e)).replace("\n", " ")
            print(variant, name, line, flush=True)
        r.close()
        other.close()


if __name__ == "__main__":
    main()
