#!/usr/bin/python3
"""Runs a set of data flows in SimGrid and prints when each one completes.

This is the reference that internal/flowsim is checked against (TestAgreesWithSimGrid): the
same links and flows, simulated by SimGrid's own max-min solver. It needs Debian's
python3-simgrid (3.32), which only /usr/bin/python3 can import.

Input (JSON on stdin):

    {"links": [{"name": "n0.disk.read", "bandwidth": 65e6}, ...],
     "flows": [{"size": 67e6, "route": ["n0.disk.read", "n0.nic.send", ...], "start": 0}, ...]}

bandwidth is in bytes per second, size in bytes, start in seconds. Output (JSON on stdout):

    {"completions": [t0, t1, ...], "clock": T}

completions[i] is the time flow i finished; clock is when the last one did.

How the platform is built, and why:
  - Every link is a SimGrid link with the SHARED policy (the default) and latency 0.
  - Every flow gets its own pair of hosts with one explicit, non-symmetrical route through
    exactly its links, so that routing plays no part: SimGrid sees the routes flowsim sees.
  - network/model:CM02 sets the latency and bandwidth factors to 1 and weight-S to 0, so a
    flow's sharing penalty is its route's latency, which is 0 here and becomes the default
    weight 1: every flow weighs the same in the max-min solve.
  - network/crosstraffic:0. 3.32 defaults it to on, which charges every flow 5% of its rate
    on the reverse route as well (ACKs); flowsim models one direction only. The routes here
    are one-way, so there is no reverse route to charge (the results are the same with it
    on); the option says so explicitly rather than by accident of the platform.
  - With latency 0 the TCP-gamma bound (gamma / (2 * latency)) is never applied, so each
    flow's only bound is its route's slowest link, which max-min respects anyway.
"""

import json
import sys

from simgrid import Actor, Comm, Engine, LinkInRoute, NetZone, this_actor


def run(desc):
    e = Engine(["flows.py",
                "--cfg=network/model:CM02",
                "--cfg=network/crosstraffic:0",
                "--log=root.thres:critical"])
    zone = NetZone.create_full_zone("flows")
    links = {}
    for l in desc["links"]:
        link = zone.create_link(l["name"], float(l["bandwidth"]))
        link.set_latency(0)
        links[l["name"]] = link.seal()

    flows = desc["flows"]
    pairs = []
    for i, f in enumerate(flows):
        src = zone.create_host(f"src{i}", 1e9).seal()
        dst = zone.create_host(f"dst{i}", 1e9).seal()
        route = [LinkInRoute(links[name]) for name in f["route"]]
        zone.add_route(src.netpoint, dst.netpoint, None, None, route, False)
        pairs.append((src, dst))
    zone.seal()

    completions = [None] * len(flows)

    def transfer(i, src, dst, size, start):
        if start > 0:
            this_actor.sleep_for(start)
        Comm.sendto(src, dst, size)
        completions[i] = Engine.clock

    for i, f in enumerate(flows):
        src, dst = pairs[i]
        Actor.create(f"flow{i}", src, transfer, i, src, dst, int(f["size"]), float(f.get("start", 0)))
    e.run()
    return {"completions": completions, "clock": Engine.clock}


def main():
    desc = json.load(sys.stdin)
    json.dump(run(desc), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
