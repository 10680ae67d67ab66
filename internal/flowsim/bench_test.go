package flowsim

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// cluster is a synthetic cluster's links: per node disk read, disk write, NIC send and NIC
// receive; per rack uplink and downlink. Nodes are spread round-robin over the racks.
type cluster struct {
	links []Link
	nodes int
	racks int
}

const (
	diskRead = iota
	diskWrite
	nicSend
	nicRecv
	perNode
)

type clusterSpec struct {
	nodes, racks                 int
	diskReadBps, diskWriteBps    float64
	nicBps                       float64
	rackUplinkBps                float64
	sendLimit, recvLimit         int // concurrent transfers a node sends and receives
	meanRangeBytes, spreadFactor float64
}

func newCluster(c clusterSpec) cluster {
	cl := cluster{nodes: c.nodes, racks: c.racks}
	for n := range c.nodes {
		cl.links = append(cl.links,
			Link{Name: fmt.Sprintf("n%d.disk.read", n), CapacityBytesPerSecond: c.diskReadBps},
			Link{Name: fmt.Sprintf("n%d.disk.write", n), CapacityBytesPerSecond: c.diskWriteBps},
			Link{Name: fmt.Sprintf("n%d.nic.send", n), CapacityBytesPerSecond: c.nicBps},
			Link{Name: fmt.Sprintf("n%d.nic.recv", n), CapacityBytesPerSecond: c.nicBps})
	}
	for r := range c.racks {
		cl.links = append(cl.links,
			Link{Name: fmt.Sprintf("r%d.up", r), CapacityBytesPerSecond: c.rackUplinkBps},
			Link{Name: fmt.Sprintf("r%d.down", r), CapacityBytesPerSecond: c.rackUplinkBps})
	}
	return cl
}

func (cl cluster) rack(node int) int { return node % cl.racks }

// route is a copy from src to dst: 6 links across racks, 4 within one.
func (cl cluster) route(src, dst int) []LinkID {
	r := []LinkID{LinkID(src*perNode + diskRead), LinkID(src*perNode + nicSend)}
	if rs, rd := cl.rack(src), cl.rack(dst); rs != rd {
		up := LinkID(cl.nodes*perNode + 2*rs)
		down := LinkID(cl.nodes*perNode + 2*rd + 1)
		r = append(r, up, down)
	}
	return append(r, LinkID(dst*perNode+nicRecv), LinkID(dst*perNode+diskWrite))
}

type transfer struct {
	src, dst  int
	sizeBytes float64
}

// limitDriver runs transfers the way a scheduler with per-node stream limits does: a
// transfer starts once its source has a free send slot and its destination a free receive
// slot, each node taking its pending transfers in order.
type limitDriver struct {
	s               *Sim
	cl              cluster
	ts              []transfer
	started         []bool
	bySrc, byDst    [][]int // pending transfers per node, in order
	headSrc         []int   // bySrc[n][:headSrc[n]] are all started
	headDst         []int
	sending, recvng []int
	sendLimit       int
	recvLimit       int
	flowTransfer    []int // per flow id, its transfer
	maxActive       int
	events          int
}

func newLimitDriver(s *Sim, cl cluster, ts []transfer, sendLimit, recvLimit int) *limitDriver {
	d := &limitDriver{
		s: s, cl: cl, ts: ts, started: make([]bool, len(ts)),
		bySrc: make([][]int, cl.nodes), byDst: make([][]int, cl.nodes),
		headSrc: make([]int, cl.nodes), headDst: make([]int, cl.nodes),
		sending: make([]int, cl.nodes), recvng: make([]int, cl.nodes),
		sendLimit: sendLimit, recvLimit: recvLimit,
	}
	for i, t := range ts {
		d.bySrc[t.src] = append(d.bySrc[t.src], i)
		d.byDst[t.dst] = append(d.byDst[t.dst], i)
	}
	return d
}

func (d *limitDriver) start(i int) {
	t := d.ts[i]
	id, err := d.s.Start(Flow{SizeBytes: t.sizeBytes, Route: d.cl.route(t.src, t.dst)})
	if err != nil {
		panic(err)
	}
	for len(d.flowTransfer) <= int(id) {
		d.flowTransfer = append(d.flowTransfer, -1)
	}
	d.flowTransfer[id] = i
	d.started[i] = true
	d.sending[t.src]++
	d.recvng[t.dst]++
}

// fill starts what node n's free slots allow, from its pending lists.
func (d *limitDriver) fill(n int) {
	for d.headSrc[n] < len(d.bySrc[n]) && d.started[d.bySrc[n][d.headSrc[n]]] {
		d.headSrc[n]++
	}
	for _, i := range d.bySrc[n][d.headSrc[n]:] {
		if d.sending[n] >= d.sendLimit {
			break
		}
		if !d.started[i] && d.recvng[d.ts[i].dst] < d.recvLimit {
			d.start(i)
		}
	}
	for d.headDst[n] < len(d.byDst[n]) && d.started[d.byDst[n][d.headDst[n]]] {
		d.headDst[n]++
	}
	for _, i := range d.byDst[n][d.headDst[n]:] {
		if d.recvng[n] >= d.recvLimit {
			break
		}
		if !d.started[i] && d.sending[d.ts[i].src] < d.sendLimit {
			d.start(i)
		}
	}
}

// run starts what it can, then on every completion refills the two nodes it freed.
func (d *limitDriver) run() float64 {
	for n := range d.cl.nodes {
		d.fill(n)
	}
	for d.s.Active() > 0 {
		d.maxActive = max(d.maxActive, d.s.Active())
		_, done := d.s.Next()
		d.events++
		for _, id := range done {
			t := d.ts[d.flowTransfer[id]]
			d.sending[t.src]--
			d.recvng[t.dst]--
		}
		for _, id := range done {
			t := d.ts[d.flowTransfer[id]]
			d.fill(t.src)
			d.fill(t.dst)
		}
	}
	return d.s.Now()
}

// largeSpec is a 1,000-node, 25-rack cluster: 200/150 MB/s disks, 10 GbE NICs, and rack
// uplinks at uplinkBps; 100 GB a node over 768 ranges (256 vnodes, RF 3), sizes spread 0.5x to
// 1.5x.
func largeSpec(uplinkBps float64) clusterSpec {
	return clusterSpec{
		nodes: 1000, racks: 25,
		diskReadBps: 200e6, diskWriteBps: 150e6, nicBps: 1.25e9, rackUplinkBps: uplinkBps,
		meanRangeBytes: 100e9 / 768, spreadFactor: 1,
	}
}

func (c clusterSpec) rangeBytes(rng *rand.Rand) float64 {
	return c.meanRangeBytes * (1 + c.spreadFactor*(rng.Float64()-0.5))
}

// lossTransfers: node 0 is lost; each of its 768 ranges is copied from one of the other
// replicas to a node in another rack than the source (so every route crosses 6 links).
func lossTransfers(c clusterSpec, cl cluster, rng *rand.Rand) []transfer {
	ts := make([]transfer, 768)
	for i := range ts {
		src := 1 + rng.IntN(c.nodes-1)
		dst := 1 + rng.IntN(c.nodes-1)
		for cl.rack(dst) == cl.rack(src) {
			dst = 1 + rng.IntN(c.nodes-1)
		}
		ts[i] = transfer{src: src, dst: dst, sizeBytes: c.rangeBytes(rng)}
	}
	return ts
}

// joinTransfers: 10 nodes join (nodes 0 to 9, their links idle until then), each taking 256
// vnodes and so 768 range copies, from existing nodes in other racks.
func joinTransfers(c clusterSpec, cl cluster, rng *rand.Rand) []transfer {
	var ts []transfer
	for dst := range 10 {
		for range 768 {
			src := 10 + rng.IntN(c.nodes-10)
			for cl.rack(src) == cl.rack(dst) {
				src = 10 + rng.IntN(c.nodes-10)
			}
			ts = append(ts, transfer{src: src, dst: dst, sizeBytes: c.rangeBytes(rng)})
		}
	}
	return ts
}

func benchmarkEvent(b *testing.B, c clusterSpec, transfers func(clusterSpec, cluster, *rand.Rand) []transfer) {
	for b.Loop() {
		rng := rand.New(rand.NewPCG(1, 2))
		cl := newCluster(c)
		ts := transfers(c, cl, rng)
		s, err := New(Config{Links: cl.links})
		if err != nil {
			b.Fatal(err)
		}
		d := newLimitDriver(s, cl, ts, c.sendLimit, c.recvLimit)
		end := d.run()
		b.ReportMetric(float64(len(ts)), "flows")
		b.ReportMetric(float64(d.events), "instants")
		b.ReportMetric(float64(d.maxActive), "max-active")
		b.ReportMetric(end, "sim-seconds")
	}
}

// BenchmarkLargeLoss simulates re-replicating a lost node's 768 ranges in a 1,000-node,
// 25-rack cluster, each node sending and receiving up to 4 at once; with 12.5 GB/s uplinks
// (10 GbE, 4:1 oversubscribed) the disks are the bottleneck, with 2 GB/s the uplinks are.
func BenchmarkLargeLoss(b *testing.B) {
	for _, up := range []float64{12.5e9, 2e9} {
		b.Run(fmt.Sprintf("uplink=%gGBps", up/1e9), func(b *testing.B) {
			c := largeSpec(up)
			c.sendLimit, c.recvLimit = 4, 4
			benchmarkEvent(b, c, lossTransfers)
		})
	}
}

// BenchmarkLargeJoin simulates 10 nodes joining a 1,000-node, 25-rack cluster (7,680 range
// copies), each joiner receiving up to 300 at once and each source sending up to 8.
func BenchmarkLargeJoin(b *testing.B) {
	for _, up := range []float64{12.5e9, 2e9} {
		b.Run(fmt.Sprintf("uplink=%gGBps", up/1e9), func(b *testing.B) {
			c := largeSpec(up)
			c.sendLimit, c.recvLimit = 8, 300
			benchmarkEvent(b, c, joinTransfers)
		})
	}
}
