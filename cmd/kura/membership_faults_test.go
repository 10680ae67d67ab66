package main

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/engine/lsm"
	"github.com/kuradb/kura/internal/ring"
)

// Issue 32's must-show, under faults: a change whose joiner, leaving node or stream source
// is SIGKILLed mid-stream, and a cluster whose metadata voters lose their quorum for a
// while. Each test runs real `kura server --ring-source=log` processes (startRingNode)
// with a real Redis client writing and reading at QUORUM throughout (startMonotonic),
// keys loaded before the change and never rewritten, and checks afterwards that every
// acknowledged write reads back at QUORUM through every live node and at ALL
// (faultCluster.checkNothingLost), and that no read returned less than was acknowledged.

// TestRestartedJoiningNodeResumesItsStreams: while a 4th node joins 3 that hold data, its
// streams slowed to 256 KiB/s, it is SIGKILLed half-way through its transfers and started
// again with the same command line; the join completes, and nothing acknowledged is lost.
// It measures what the sources sent before the kill (kura_stream_sent_bytes_total),
// what the joiner had recorded durably by then (its progress files) and what the
// sources sent after the restart, and checks that the restarted joiner asked only for
// what it had not recorded (the pages in flight at the kill, and the rest), not for its
// transfers again.
//
// Issue 32 asks that a resumed join re-send less than 5% of what it had received. That
// is logged, not asserted: what is re-sent is the page each running transfer had in
// flight (up to 4 transfers, pages of up to 1 MiB), and under a receive limit a page
// is whole at the joiner before its receive reservation is due (stream.Limiter.Reserve),
// so a kill almost always loses about 4 pages. With this test's data a transfer is one
// page of about 270 KB and about 70% of what had arrived is sent again; the 5% holds
// only for joins that had received some 80 MiB and more, as seed 004's experiment
// measures (scripts/bench-join.sh, docs/bench/join.md). Seeded (KURA_JOIN_RESTART_SEED).
func TestRestartedJoiningNodeResumesItsStreams(t *testing.T) {
	seed := faultSeed(t, "KURA_JOIN_RESTART_SEED")
	fc := newFaultCluster(t, 3, 4)
	c1 := fc.client(1)
	fc.load(1)
	work, stop := faultWork(t, c1, seed)

	start := time.Now()
	fc.start(4, "--stream-limit", "262144")
	streams := filepath.Join(fc.dir, "n4", "streams")
	st := faultWaitMidChange(t, fc.nodes[4].adminAddr, func() int { _, done := faultProgressTotals(faultReadProgress(streams)); return done })
	transfers := st.Topology.Change.Transfers
	t.Logf("after %v the joiner streams:%s", time.Since(start).Round(time.Millisecond), faultDescribeStreams(st.Topology.Streams))

	if err := fc.nodes[4].kill(t, syscall.SIGKILL); err == nil {
		t.Fatal("the joiner exited cleanly after SIGKILL")
	}
	atKill := faultReadProgress(streams)
	recorded, doneAtKill := faultProgressTotals(atKill)
	// Pages the sources had in flight (paced by their limiters) go on being counted for a
	// moment after the kill; read the counters once they have stopped, so that they count
	// as sent before the restart (CI once failed the check below by such pages: 307 KB
	// counted after, on a loaded machine).
	time.Sleep(3 * time.Second)
	var sentBefore float64
	for k := 1; k <= 3; k++ {
		sentBefore += faultMetric(t, fc.nodes[k].adminAddr, "kura_stream_sent_bytes_total")
	}
	t.Logf("SIGKILLed the joiner: %d of %d transfers done, %d B recorded in its progress files; the sources had sent %.0f B",
		doneAtKill, transfers, recorded, sentBefore)
	if recorded == 0 {
		t.Fatal("the joiner had recorded nothing: not killed mid-stream")
	}

	fc.restart(4)
	restarted := time.Now()
	var resumed []admin.StreamStatus
	final := faultFollowProgress(t, atKill, 2*time.Minute, func() bool {
		if st, err := fetchStatus(context.Background(), fc.nodes[4].adminAddr); err == nil && st.Topology != nil {
			for _, s := range st.Topology.Streams {
				if s.ResumedFrom > 0 && !slices.ContainsFunc(resumed, func(r admin.StreamStatus) bool { return r.Index == s.Index }) {
					resumed = append(resumed, s)
				}
			}
		}
		st, err := fetchStatus(context.Background(), fc.nodes[1].adminAddr)
		if err != nil || st.Topology == nil || !settled(4)(st) {
			return false
		}
		t.Logf("joined at epoch %d, %v after the restart (%v after the joiner first started)", st.Topology.Epoch,
			time.Since(restarted).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
		return true
	}, streams)
	var sentTotal float64
	for k := 1; k <= 3; k++ {
		sentTotal += faultMetric(t, fc.nodes[k].adminAddr, "kura_stream_sent_bytes_total")
	}
	size, doneSeen := faultProgressTotals(final)
	sentAfter := int64(sentTotal - sentBefore)
	resent := int64(sentBefore) - recorded
	t.Logf("streams that resumed part-way (status):%s", faultDescribeStreams(resumed))
	t.Logf("the join's transfers hold %d B (%d of %d progress files seen done); the sources sent %.0f B before the kill and %d B after it",
		size, doneSeen, transfers, sentBefore, sentAfter)
	t.Logf("re-sent after the restart: %d B, %.1f%% of the %.0f B the joiner had received before the kill (a restart from "+
		"scratch re-sends all of it); the pages it had received but not yet applied and recorded, %.1f%% of what it had recorded",
		resent, 100*float64(resent)/sentBefore, sentBefore, 100*float64(resent)/float64(recorded))
	// A resumed transfer asks again at most the page it had in flight: at most
	// Concurrency (4) pages of at most PageBytes (1 MiB) and a row each.
	if resent > 4*(1<<20+4<<10) {
		t.Errorf("the restarted joiner was sent %d B again, more than the 4 pages of 1 MiB it can have had in flight", resent)
	}
	if doneSeen == transfers {
		// What the sources sent after the restart is what was not recorded before it.
		if sentAfter > size-recorded/2 {
			t.Errorf("after the restart the sources sent %d B, more than the %d B the joiner lacked: it did not resume", sentAfter, size-recorded)
		}
	} else {
		t.Logf("not every transfer's final progress was seen: the check of what was sent after the restart is skipped")
	}

	time.Sleep(time.Second)
	stop()
	fc.checkNothingLost(work, nil, 1, 2, 3, 4)
}

// the same command line: the decommission completes and nothing acknowledged is lost.
// Every transfer's source is the leaving node, so the stream is paced where it is sent:
// node 4's --stream-limit (384 KiB/s, kept over its restart) holds the pages it has not
// sent yet when it is killed; the receivers' limits are set lower still with kura admin
// stream-limit (128 KiB/s each). A receiver asks the leaving node again from the page
// each transfer was on until its failure detector holds it down; then it merges each
// range from the old replicas that stay (TestStreamFailoverKeepsEveryWriteOnAQuorumOfTheNewReplicas
// shows why from them all): the restart takes about as long, so either may serve the
// rest; the test logs which did. Seeded (KURA_LEAVE_RESTART_SEED).
func TestRestartedLeavingNodeCompletesItsDecommission(t *testing.T) {
	seed := faultSeed(t, "KURA_LEAVE_RESTART_SEED")
	fc := newFaultCluster(t, 4, 4, "--stream-limit", "393216")
	c1 := fc.client(1)
	fc.load(1)
	work, stop := faultWork(t, c1, seed)
	for k := 1; k <= 3; k++ {
		if out, err := runKura(t, "admin", "stream-limit", "128K", "--admin", fc.nodes[k].adminAddr); err != nil {
			t.Fatalf("stream-limit on node %d: %v\n%s", k, err, out)
		}
	}
	start := time.Now()
	out, err := runKura(t, "admin", "decommission", "--admin", fc.nodes[4].adminAddr)
	if err != nil {
		t.Fatalf("decommission: %v\n%s", err, out)
	}
	t.Logf("kura admin decommission:\n%s", out)
	st := faultWaitMidChange(t, fc.nodes[1].adminAddr, nil)
	before, _ := fc.streamSources(1, 2, 3)
	t.Logf("after %v, %d of %d transfers done; the receivers stream from %v (node 4 is %s)", time.Since(start).Round(time.Millisecond),
		st.Topology.Change.Done, st.Topology.Change.Transfers, before, fc.id(4))

	receivers := []string{filepath.Join(fc.dir, "n1", "streams"), filepath.Join(fc.dir, "n2", "streams"), filepath.Join(fc.dir, "n3", "streams")}
	if err := fc.nodes[4].kill(t, syscall.SIGKILL); err == nil {
		t.Fatal("the leaving node exited cleanly after SIGKILL")
	}
	killed := time.Now()
	atKill := faultReadAllProgress(receivers...)
	recorded, doneAtKill := faultProgressTotals(atKill)
	t.Logf("SIGKILLed the leaving node: the receivers had recorded %d B, %d transfers done", recorded, doneAtKill)
	fc.restart(4)
	t.Logf("the leaving node restarted %v after its SIGKILL", time.Since(killed).Round(time.Millisecond))
	after := map[string]int{}
	final := faultFollowProgress(t, atKill, 2*time.Minute, func() bool {
		srcs, _ := fc.streamSources(1, 2, 3)
		for id, n := range srcs {
			after[id] = max(after[id], n)
		}
		st, err := fetchStatus(context.Background(), fc.nodes[1].adminAddr)
		if err != nil || st.Topology == nil || !settled(3)(st) {
			return false
		}
		t.Logf("decommissioned at epoch %d, %v after the kill", st.Topology.Epoch, time.Since(killed).Round(time.Millisecond))
		return true
	}, receivers...)
	var others []string
	for id := range after {
		if id != fc.id(4) {
			others = append(others, fmt.Sprintf("node %d", fc.number(id)))
		}
	}
	t.Logf("after the kill the receivers streamed from %v; from others than the leaving node: %v", after, others)
	// The restarted node's counter counts what it sent since its restart; the receivers'
	// counters what they sent as merge sources of each other's transfers.
	size, doneSeen := faultProgressTotals(final)
	sentAfter := int64(faultMetric(t, fc.nodes[4].adminAddr, "kura_stream_sent_bytes_total"))
	var sentByOthers int64
	for k := 1; k <= 3; k++ {
		sentByOthers += int64(faultMetric(t, fc.nodes[k].adminAddr, "kura_stream_sent_bytes_total"))
	}
	t.Logf("the transfers hold %d B (%d of %d progress files seen done), %d B of which the receivers had not recorded at the kill; "+
		"after it the leaving node sent %d B and the other old replicas %d B (the rest had reached the receivers before the kill)",
		size, doneSeen, st.Topology.Change.Transfers, size-recorded, sentAfter, sentByOthers)
	if len(others) == 0 && doneSeen == st.Topology.Change.Transfers && sentAfter > size-recorded/2 {
		t.Errorf("after its restart the leaving node sent %d B, more than the %d B the receivers lacked: they did not resume", sentAfter, size-recorded)
	}
	time.Sleep(time.Second)
	stop()
	fc.checkNothingLost(work, nil, 1, 2, 3)
}

// TestJoinCompletesWhenAStreamSourceIsKilled: while a 4th node joins 3 that hold data,
// their streams paced where they are sent (--stream-limit 128 KiB/s on each source, so
// that a page a source has not sent yet is lost with it), a node the joiner streams from
// (not node 1, the clients' coordinator) is SIGKILLed mid-stream and stays down: the
// joiner asks each range's other old replicas after 3 failed asks in a row of the dead
// one, and the join completes without it; it is then started again. Nothing
// acknowledged is lost. Seeded (KURA_SOURCE_KILL_SEED).
func TestJoinCompletesWhenAStreamSourceIsKilled(t *testing.T) {
	seed := faultSeed(t, "KURA_SOURCE_KILL_SEED")
	fc := newFaultCluster(t, 3, 4, "--stream-limit", "131072")
	c1 := fc.client(1)
	fc.load(1)
	work, stop := faultWork(t, c1, seed)

	start := time.Now()
	fc.start(4)
	streams := filepath.Join(fc.dir, "n4", "streams")
	var victim int
	var running []admin.StreamStatus
	waitTopology(t, fc.nodes[4].adminAddr, "the joiner streaming from node 2 or 3", time.Minute, func(st *admin.ClusterStatus) bool {
		if st.Topology.Change == nil {
			return false
		}
		_, done := faultProgressTotals(faultReadProgress(streams))
		if done > st.Topology.Change.Transfers-3 {
			t.Fatalf("the join is nearly done (%d of %d transfers) before its source could be killed", done, st.Topology.Change.Transfers)
		}
		for _, s := range st.Topology.Streams {
			if k := fc.number(s.Source); !s.Done && (k == 2 || k == 3) {
				victim, running = k, st.Topology.Streams
				return true
			}
		}
		return false
	})
	t.Logf("after %v the joiner streams:%s", time.Since(start).Round(time.Millisecond), faultDescribeStreams(running))
	if err := fc.nodes[victim].kill(t, syscall.SIGKILL); err == nil {
		t.Fatalf("node %d exited cleanly after SIGKILL", victim)
	}
	killed := time.Now()
	_, doneAtKill := faultProgressTotals(faultReadProgress(streams))
	t.Logf("SIGKILLed node %d (%s), a source of the join, with %d transfers done", victim, fc.id(victim), doneAtKill)

	// Which node each transfer asked from the victim asks after the kill.
	fromVictim := map[int]bool{}
	for _, s := range running {
		if s.Source == fc.id(victim) && !s.Done {
			fromVictim[s.Index] = true
		}
	}
	failedOver := map[int]string{}
	var failures int
	st := waitTopology(t, fc.nodes[1].adminAddr, "the join complete with a source down", 2*time.Minute, func(st *admin.ClusterStatus) bool {
		if js, err := fetchStatus(context.Background(), fc.nodes[4].adminAddr); err == nil && js.Topology != nil {
			for _, s := range js.Topology.Streams {
				if fromVictim[s.Index] && s.Source != fc.id(victim) {
					failedOver[s.Index] = fmt.Sprintf("node %d", fc.number(s.Source))
				}
				failures = max(failures, s.Failures)
			}
		}
		return settled(4)(st)
	})
	t.Logf("joined at epoch %d, %v after the kill, node %d still down; of the %d transfers it was asked for at the kill, "+
		"these asked another old replica: %v (most failed asks seen in one transfer: %d)",
		st.Topology.Epoch, time.Since(killed).Round(time.Millisecond), victim, len(fromVictim), failedOver, failures)
	if len(failedOver) == 0 {
		t.Errorf("no transfer asked of the killed source was seen asking another replica")
	}
	fc.restart(victim)
	fc.waitMember(1, victim, "up again", func(m admin.MemberStatus) bool { return m.Up && m.Status == "normal" })
	time.Sleep(time.Second)
	stop()
	fc.checkNothingLost(work, nil, 1, 2, 3, 4)
}

// TestDataRequestsGoOnWhileTheVotersLackQuorum: in a cluster of 4 (3 metadata voters),
// two voters, the log's leader among them, are stopped (SIGSTOP) for about 10 s, then
// continued. Meanwhile data requests go on at every level the live replicas can meet:
// through the live voter, writes and reads at ONE (every range keeps a live replica)
// succeed, and so do the QUORUM workload's requests on the ranges that keep two live
// replicas (those with both stopped voters among their replicas fail: unavailable, or
// a timeout, never a stale read). Topology changes wait: a decommission asked meanwhile
// is refused (its ranges would go to stopped nodes), and a 5th node started meanwhile
// waits to register, becomes ready only once the voters are back, and then joins. Nothing
// acknowledged is lost: the QUORUM workload's writes, the keys loaded before, and the
// writes acknowledged at ONE during the outage (read back at QUORUM once the live
// voter's hints for the stopped nodes are replayed, and at ALL). Seeded
// (KURA_VOTERS_SEED).
func TestDataRequestsGoOnWhileTheVotersLackQuorum(t *testing.T) {
	seed := faultSeed(t, "KURA_VOTERS_SEED")
	fc := newFaultCluster(t, 4, 5)
	// While the 4th node became normal the voters may have been changing (an addition
	// before each removal): wait for the 3 that 4 normal members call for.
	// Members on hosts of their own in one rack: the 3 lowest IDs (meta.ChooseVoters).
	ids := []string{fc.id(1), fc.id(2), fc.id(3), fc.id(4)}
	slices.Sort(ids)
	st := waitTopology(t, fc.nodes[1].adminAddr, "the voters of 4 members and a leader", 30*time.Second, func(st *admin.ClusterStatus) bool {
		return slices.Equal(st.Topology.Voters, ids[:3]) && st.Topology.Leader != ""
	})
	voters, leader := st.Topology.Voters, st.Topology.Leader
	// Stop the leader and another voter; the third voter and the non-voter run on.
	stopped := []int{fc.number(leader)}
	var live, other int
	for k := 1; k <= 4; k++ {
		switch {
		case !slices.Contains(voters, fc.id(k)):
			other = k
		case k == stopped[0]:
		case len(stopped) < 2:
			stopped = append(stopped, k)
		default:
			live = k
		}
	}
	if stopped[0] == 0 || live == 0 || other == 0 {
		t.Fatalf("voters %v, leader %s: not 3 voters among the 4 nodes", voters, leader)
	}
	t.Logf("voters %v (leader node %d); stopping nodes %v, leaving voter node %d and non-voter node %d running",
		voters, fc.number(leader), stopped, live, other)

	c := fc.client(live)
	fc.load(live)
	work, stopWork := faultWork(t, c, seed)
	one := redis.NewClient(&redis.Options{Addr: fc.nodes[live].addr, PoolSize: 2, MaxRetries: -1,
		OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.Do(ctx, "KURA.CONSISTENCY", "ONE").Err() }})
	t.Cleanup(func() { one.Close() })
	time.Sleep(time.Second)

	for _, k := range stopped {
		pid := fc.nodes[k].cmd.Process.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	}
	stoppedAt := time.Now()
	w0, r0, f0 := work.counts()

	// Writes and reads at ONE through the live voter, while the voters lack quorum.
	oneAcked := map[string]string{}
	type oneOp struct {
		at  time.Duration
		op  string
		err error
	}
	var oneOps []oneOp
	oneDone, oneStop := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(oneDone)
		ctx := context.Background()
		for i := 0; ; i++ {
			select {
			case <-oneStop:
				return
			default:
			}
			key, val := fmt.Sprintf("o-%d", i), fmt.Sprintf("one-%d", i)
			at := time.Since(stoppedAt)
			err := one.Set(ctx, key, val, 0).Err()
			oneOps = append(oneOps, oneOp{at, "SET " + key, err})
			if err == nil {
				oneAcked[key] = val
				at = time.Since(stoppedAt)
				got, err := one.Get(ctx, key).Result()
				if err == redis.Nil {
					// ONE then ONE need not meet: the read may ask a live replica the
					// write has not reached yet. The request worked, which is the point.
					err = nil
				} else if err == nil && got != val {
					err = fmt.Errorf("read %q at ONE after its write at ONE", got)
				}
				oneOps = append(oneOps, oneOp{at, "GET " + key, err})
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()

	// The voters are continued 10 s after they were stopped, whatever the test waits on.
	const outage = 10 * time.Second
	var w1, r1, f1 int
	continued := make(chan time.Time, 1)
	var stoppedPIDs []int // read here: the timer must not read fc.nodes, which the test writes
	for _, k := range stopped {
		stoppedPIDs = append(stoppedPIDs, fc.nodes[k].cmd.Process.Pid)
	}
	time.AfterFunc(outage, func() {
		w1, r1, f1 = work.counts()
		close(oneStop)
		<-oneDone
		for _, pid := range stoppedPIDs {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		continued <- time.Now()
	})

	// A topology change waits for the voters.
	time.Sleep(time.Second)
	out, err := runKura(t, "admin", "decommission", "--admin", fc.nodes[other].adminAddr)
	t.Logf("kura admin decommission of node %d while the voters are stopped: %v: %s", other, err, strings.TrimSpace(out))
	if err == nil {
		t.Errorf("a decommission started while 2 of 3 voters were stopped")
	}
	for _, k := range []int{live, other} {
		if st, err := fetchStatus(context.Background(), fc.nodes[k].adminAddr); err == nil && st.Topology != nil {
			t.Logf("node %d's status while the voters are stopped: epoch %d, voters %v, leader %q", k,
				st.Topology.Epoch, st.Topology.Voters, st.Topology.Leader)
		}
	}
	// A new node registers through the live voter: it waits for the voters.
	started := time.Now()
	// Follow the live voter's view: when it holds both stopped nodes down, and which
	// leader its status names meanwhile.
	var downAt time.Duration
	var leaders []string
	watched := make(chan struct{})
	// The watcher reads no fc.nodes, which the test writes as node 5 starts.
	liveAdmin := fc.nodes[live].adminAddr
	var stoppedIDs []string
	for _, k := range stopped {
		stoppedIDs = append(stoppedIDs, fc.id(k))
	}
	go func() {
		defer close(watched)
		for time.Since(stoppedAt) < outage {
			if st, err := fetchStatus(context.Background(), liveAdmin); err == nil && st.Topology != nil {
				down := 0
				for _, m := range st.Members {
					if !m.Up && slices.Contains(stoppedIDs, m.ID) {
						down++
					}
				}
				if down == len(stopped) && downAt == 0 {
					downAt = time.Since(stoppedAt)
				}
				if downAt > 0 && !slices.Contains(leaders, st.Topology.Leader) {
					leaders = append(leaders, st.Topology.Leader)
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	fc.nodes[5] = startRingNode(t, fc.dir, fc.base, 5, "127.0.0.1:"+strconv.Itoa(fc.base+live))
	ready := time.Now()
	back := <-continued
	t.Logf("a 5th node started %v into the outage was ready %v later, %v after the voters were continued",
		started.Sub(stoppedAt).Round(time.Millisecond), ready.Sub(started).Round(time.Millisecond), ready.Sub(back).Round(time.Millisecond))
	if ready.Before(back) {
		t.Errorf("the 5th node registered while the voters lacked quorum")
	}
	if !strings.Contains(fc.nodes[5].logs(), "registered with the cluster") {
		t.Errorf("the 5th node's log does not say it registered:\n%s", fc.nodes[5].logs())
	}
	<-watched
	var named []string
	for _, id := range leaders {
		named = append(named, fmt.Sprintf("%q (node %d)", id, fc.number(id)))
	}
	t.Logf("node %d held the stopped nodes down %v into the outage; its status named as the leader meanwhile: %v", live, downAt.Round(time.Millisecond), named)
	if downAt == 0 {
		t.Fatalf("node %d never held the stopped nodes down", live)
	}
	// Before the failure detector holds them down, a request may wait on a stopped replica
	// until it times out; after, requests at ONE go to the live replicas only.
	var oneOK, oneFailed, lateOK, lateFailed int
	for _, op := range oneOps {
		late := op.at > downAt+time.Second
		if op.err == nil {
			oneOK++
			if late {
				lateOK++
			}
			continue
		}
		oneFailed++
		if late {
			lateFailed++
		}
		t.Logf("at ONE, %v into the outage: %s: %v", op.at.Round(time.Millisecond), op.op, op.err)
	}
	t.Logf("the voters lacked quorum for %v: through node %d, %d writes and reads at ONE succeeded and %d failed (%d and %d from 1 s after "+
		"the stopped nodes were held down); the QUORUM workload had %d writes and %d reads acknowledged, %d failed",
		back.Sub(stoppedAt).Round(time.Millisecond), live, oneOK, oneFailed, lateOK, lateFailed, w1-w0, r1-r0, f1-f0)
	if lateOK < 50 || lateFailed > 0 {
		t.Errorf("writes and reads at ONE did not go on while the voters lacked quorum: %d succeeded and %d failed once the stopped nodes were held down",
			lateOK, lateFailed)
	}
	if w1-w0 == 0 || r1-r0 == 0 {
		t.Errorf("no QUORUM write or read succeeded while the voters lacked quorum (%d writes, %d reads)", w1-w0, r1-r0)
	}

	st = waitTopology(t, fc.nodes[live].adminAddr, "the join complete", time.Minute, settled(5))
	t.Logf("joined at epoch %d, %v after the voters were continued; voters now %v", st.Topology.Epoch,
		time.Since(back).Round(time.Millisecond), st.Topology.Voters)
	// The writes at ONE reached the live replicas only: the live voter holds hints for the
	// stopped ones, replayed now; a QUORUM read may ask two that lacked them until then.
	waitHints(t, fc.nodes[live].adminAddr, func(n int64) bool { return n == 0 })
	time.Sleep(time.Second)
	stopWork()
	fc.checkNothingLost(work, oneAcked, live, stopped[0], stopped[1], other, 5)
}

// TestStatusSaysWhenTheVotersLackQuorum: with two of three voters stopped, the live
// voter's kura admin status names no leader and says the voters lack a quorum
// (metalog.Status.Quorum), rather than the last leader it heard of.
func TestStatusSaysWhenTheVotersLackQuorum(t *testing.T) {
	fc := newFaultCluster(t, 3, 3)
	st := waitTopology(t, fc.nodes[1].adminAddr, "3 voters and a leader", 30*time.Second, func(st *admin.ClusterStatus) bool {
		return len(st.Topology.Voters) == 3 && st.Topology.Leader != ""
	})
	// Stop the leader and one other voter; the one left registered through a seed.
	stopped := []int{fc.number(st.Topology.Leader)}
	for k := 3; len(stopped) < 2; k-- {
		if k != stopped[0] {
			stopped = append(stopped, k)
		}
	}
	live := 6 - stopped[0] - stopped[1]
	for _, k := range stopped {
		pid := fc.nodes[k].cmd.Process.Pid
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	}
	t.Logf("stopped nodes %v (the leader, node %d, among them); node %d runs", stopped, stopped[0], live)
	for _, k := range stopped {
		fc.waitMember(live, k, "held down", memberDown)
	}
	time.Sleep(5 * time.Second) // several election timeouts
	st, err := fetchStatus(context.Background(), fc.nodes[live].adminAddr)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printTopology(&b, st.Topology)
	if st.Topology.Leader != "" {
		t.Errorf("with 2 of 3 voters stopped for over 5 s, node %d's status names node %d as the metadata log's leader:\n%s",
			live, fc.number(st.Topology.Leader), b.String())
	}
	if !st.Topology.NoQuorum || !strings.Contains(b.String(), "lack a quorum") {
		t.Errorf("node %d's status does not say the voters lack a quorum:\n%s", live, b.String())
	}
}

// TestStreamFailoverKeepsEveryWriteOnAQuorumOfTheNewReplicas: a copy from the replica
// that leaves a range holds every write that replica held; a copy from any other single
// replica may miss a write acknowledged by the leaving replica and one other. So when the
// leaving replica is down, the destination merges the range from every old replica that
// stays (ringLog.startTransfers, mergeSources).
//
// Here node 2 misses writes (it is SIGKILLed while they are written at QUORUM, and
// --hint-max-bytes 1 drops its hints, as a full hint store or an expired hint window
// would); node 4 is then decommissioned and SIGKILLed as its streams start. The
// decommission completes from the replicas that stay, and, read offline afterwards,
// every write acknowledged at QUORUM is on at least two of the three replicas left.
func TestStreamFailoverKeepsEveryWriteOnAQuorumOfTheNewReplicas(t *testing.T) {
	fc := newFaultCluster(t, 4, 4, "--stream-limit", "131072", "--hint-max-bytes", "1")
	fc.load(1)
	bulk := faultBulkClient(fc.nodes[1].addr)
	defer bulk.Close()

	// Node 2 misses the x- keys.
	if err := fc.nodes[2].kill(t, syscall.SIGKILL); err == nil {
		t.Fatal("node 2 exited cleanly after SIGKILL")
	}
	fc.waitMember(1, 2, "down", memberDown)
	const xs = 1000
	ctx := context.Background()
	for lo := 0; lo < xs; lo += 100 {
		pipe := bulk.Pipeline()
		for i := lo; i < lo+100; i++ {
			pipe.Set(ctx, fmt.Sprintf("x-%d", i), fmt.Sprintf("y-%d", i), 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("writing the x- keys at QUORUM with node 2 down: %v", err)
		}
	}
	fc.restart(2)
	fc.waitMember(1, 2, "up", memberUp)
	// The node that plans the decommission must see node 2 up too: gossip reaches node 4
	// a moment after node 1 on a loaded machine (CI once planned it with node 2 still down).
	fc.waitMember(4, 2, "up", memberUp)

	// Decommission node 4 and kill it as its streams start: they fail over.
	out, err := runKura(t, "admin", "decommission", "--admin", fc.nodes[4].adminAddr)
	if err != nil {
		t.Fatalf("decommission: %v\n%s", err, out)
	}
	if err := fc.nodes[4].kill(t, syscall.SIGKILL); err == nil {
		t.Fatal("node 4 exited cleanly after SIGKILL")
	}
	sources := map[string]bool{}
	waitTopology(t, fc.nodes[1].adminAddr, "the decommission complete, node 4 down", 2*time.Minute, func(st *admin.ClusterStatus) bool {
		srcs, _ := fc.streamSources(1, 2, 3)
		for id := range srcs {
			sources[fmt.Sprintf("node %d", fc.number(id))] = true
		}
		return settled(3)(st)
	})
	t.Logf("decommissioned with node 4 down; the receivers streamed from %v", slices.Sorted(maps.Keys(sources)))

	// Count each x- key's holders among the 3 replicas left (every range's).
	for k := 1; k <= 3; k++ {
		if err := fc.nodes[k].kill(t, syscall.SIGTERM); err != nil {
			t.Fatalf("node %d: %v", k, err)
		}
	}
	holders := map[string][]int{}
	for k := 1; k <= 3; k++ {
		eng, err := lsm.Open(filepath.Join(fc.dir, fmt.Sprintf("n%d", k), "lsm"), lsm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range xs {
			key := fmt.Sprintf("x-%d", i)
			r, found, err := eng.Get(ring.EngineKey([]byte(key)))
			if err != nil {
				t.Fatal(err)
			}
			if found && len(r.Visible(time.Now().UnixMicro())) > 0 {
				holders[key] = append(holders[key], k)
			}
		}
		eng.Close()
	}
	alone := map[int]int{}
	var example string
	for i := range xs {
		key := fmt.Sprintf("x-%d", i)
		if h := holders[key]; len(h) < 2 {
			if len(h) == 1 {
				alone[h[0]]++
			}
			if example == "" {
				example = fmt.Sprintf("%s on nodes %v", key, h)
			}
		}
	}
	if len(alone) == 0 {
		return
	}
	t.Errorf("of %d writes acknowledged at QUORUM, these many are on one replica only, by node: %v (e.g. %s)", xs, alone, example)
	// What a client sees: with that replica down, a QUORUM read misses them.
	for k := 1; k <= 3; k++ {
		fc.restart(k)
	}
	for k := 1; k <= 3; k++ {
		fc.waitMember(1, k, "up", memberUp)
	}
	victim := 0
	for k, n := range alone {
		if victim == 0 || n > alone[victim] {
			victim = k
		}
	}
	if err := fc.nodes[victim].kill(t, syscall.SIGKILL); err == nil {
		t.Fatalf("node %d exited cleanly after SIGKILL", victim)
	}
	reader := 1 + victim%3
	fc.waitMember(reader, victim, "down", memberDown)
	var keys []string
	for key, h := range holders {
		if len(h) == 1 && h[0] == victim {
			keys = append(keys, key)
		}
	}
	c := faultBulkClient(fc.nodes[reader].addr)
	defer c.Close()
	got, errs := faultReadAll(c, keys)
	lost := 0
	for _, key := range keys {
		if errs[key] == redis.Nil {
			lost++
		}
	}
	t.Errorf("with node %d down, %d of its %d sole copies read as not found at QUORUM through node %d (%d read back)", victim, lost, len(keys), reader, len(got))
}
