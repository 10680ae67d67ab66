package node

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/kuradb/kura/internal/admin"
	"github.com/kuradb/kura/internal/config"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// postRepair posts a repair request to n's admin address.
func postRepair(t *testing.T, n *Node, req admin.RepairRequest) (int, string) {
	t.Helper()
	body, _ := json.Marshal(req)
	resp, err := http.Post("http://"+n.AdminAddr()+"/repair", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// repairDone waits until n's repair is done and returns its progress.
func repairDone(t *testing.T, n *Node) admin.RepairProgress {
	t.Helper()
	var pr admin.RepairProgress
	eventuallyFor(t, time.Minute, "the repair is done", func() bool {
		var ok bool
		pr, ok = n.repairProgress()
		return ok && !pr.Running
	})
	return pr
}

// startTrio starts three nodes of config(host, seed) on hosts h1 to h3 and waits until each
// sees all three; it returns them and the third's config, for a restart. The caller shuts
// them down.
func startTrio(t *testing.T, config func(host, seed string) config.Config) (n1, n2, n3 *Node, cfg3 config.Config) {
	t.Helper()
	n1, err := Start(config("h1", ""), quiet())
	if err != nil {
		t.Fatal(err)
	}
	if n2, err = Start(config("h2", n1.GossipAddr()), quiet()); err != nil {
		n1.Shutdown(context.Background())
		t.Fatal(err)
	}
	cfg3 = config("h3", n1.GossipAddr())
	if n3, err = Start(cfg3, quiet()); err != nil {
		n1.Shutdown(context.Background())
		n2.Shutdown(context.Background())
		t.Fatal(err)
	}
	for _, n := range []*Node{n1, n2, n3} {
		eventually(t, "every node sees three normal members", func() bool { return ready(n, 3) })
	}
	return n1, n2, n3, cfg3
}

// takeDown shuts n down and waits until via's gossip holds it down; it returns n's ID.
func takeDown(t *testing.T, via, n *Node) ring.NodeID {
	t.Helper()
	id := ring.NodeID(n.ID())
	if err := n.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, string(id)+" is marked down", func() bool { return !via.cluster.member(id).Up })
	return id
}

// dropHints makes n forget the hints it holds for id, as if they had expired: only a
// repair or a rebuild brings id those writes.
func dropHints(t *testing.T, n *Node, id ring.NodeID) {
	t.Helper()
	n.cluster.hintq.Sync() // the coordinator stores hints off the request path
	if _, err := n.cluster.hints.Replay(string(id), time.Now(), 100000, func([]row.Mutation) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// A replica that missed writes and deletes while it was down, its hints gone, holds the
// same rows as the others once `kura admin repair` has run on it: an lsm, a btree and a
// memory replica, compared row by row in their engines. Nothing deleted comes back, and a
// second repair finds every range equal.
func TestRepairMakesEveryReplicaHoldTheSameRows(t *testing.T) {
	ctx := context.Background()
	n1, n2, n3, cfg2, _ := startHeteroTrio(t)
	defer n1.Shutdown(ctx)
	defer n3.Shutdown(ctx)
	c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer c1.Close()
	const keys = 300
	for i := range keys / 3 { // written while all are up; deleted while n2 is down
		if err := c1.Set(ctx, fmt.Sprint("d", i), "live", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	id2 := takeDown(t, n1, n2)
	value := strings.Repeat("v", 1000) // 1 KB rows, so that the bytes on the wire mean something
	for i := range keys {
		if err := c1.Set(ctx, fmt.Sprint("y", i), value, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := range keys / 3 {
		if err := c1.Del(ctx, fmt.Sprint("d", i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	dropHints(t, n1, id2) // only a repair brings the writes to n2
	var err error
	if n2, err = Start(cfg2, keptLog(t, "n2 restarted")); err != nil {
		t.Fatal(err)
	}
	defer n2.Shutdown(ctx)
	eventually(t, "n2 is up again", func() bool { return n1.cluster.member(id2).Up })
	if r, _ := n2.cluster.handler.Read([]byte("y0"), false); r.Found {
		t.Fatal("n2 has y0 before the repair: the test would prove nothing")
	}

	if code, body := postRepair(t, n2, admin.RepairRequest{Range: "1:x"}); code != http.StatusBadRequest {
		t.Fatalf("a bad range: %d %s", code, body)
	}
	if code, body := postRepair(t, n2, admin.RepairRequest{}); code != http.StatusOK {
		t.Fatalf("POST /repair: %d %s", code, body)
	}
	pr := repairDone(t, n2)
	t.Logf("repair: %+v", pr)
	if pr.Failed != 0 || pr.RangesDone != pr.Ranges || pr.Ranges == 0 {
		t.Fatalf("repair: %+v", pr)
	}
	// n2 missed 300 writes and 100 deletes; the lsm and memory replicas agree.
	if pr.RowsDiffering < keys+keys/3 {
		t.Fatalf("repair found %d rows differing, want at least %d", pr.RowsDiffering, keys+keys/3)
	}
	if r := pr.WireRatio(); r <= 1 || r > 1.5 {
		t.Fatalf("repair sent %.3f times the bytes that differed", r)
	}
	st, _ := n2.clusterStatus()
	if st.Repair == nil || st.Repair.Sessions != pr.Sessions {
		t.Fatalf("/cluster's repair: %+v", st.Repair)
	}
	for _, prefix := range []string{"y", "d"} {
		for i := range keys {
			if prefix == "d" && i >= keys/3 {
				break
			}
			k := []byte(fmt.Sprint(prefix, i))
			var enc [3][]byte
			for j, n := range []*Node{n1, n2, n3} {
				r, found, err := n.cluster.handler.Engine.Get(ring.EngineKey(k))
				if err != nil || !found {
					t.Fatalf("%s lacks %s after the repair: %v", n.ID(), k, err)
				}
				enc[j] = row.AppendEncode(nil, &r)
				if prefix == "d" && len(r.Visible(time.Now().UnixMicro())) > 0 {
					t.Fatalf("%s: deleted %s came back: %+v", n.ID(), k, r)
				}
			}
			if !bytes.Equal(enc[0], enc[1]) || !bytes.Equal(enc[0], enc[2]) {
				t.Fatalf("the replicas of %s differ after the repair", k)
			}
		}
	}
	if v, err := c1.Get(ctx, "d0").Result(); err != redis.Nil {
		t.Fatalf("GET d0 after the repair: %q, %v", v, err)
	}
	// Every range again, from the lsm node this time, with one peer: all equal.
	if code, body := postRepair(t, n1, admin.RepairRequest{Node: string(id2)}); code != http.StatusOK {
		t.Fatalf("POST /repair: %d %s", code, body)
	}
	again := repairDone(t, n1)
	if again.Failed != 0 || again.Equal != again.Sessions || again.Sessions == 0 || again.RowsDiffering != 0 {
		t.Fatalf("a second repair: %+v", again)
	}
	if !strings.Contains(fmt.Sprint(again.Request), string(id2)) {
		t.Fatalf("the second repair's request: %+v", again.Request)
	}
	req, _ := http.NewRequest(http.MethodDelete, "http://"+n1.AdminAddr()+"/repair", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("DELETE /repair with none running: %d, want 409", resp.StatusCode)
	}
}

// With --repair-period set, no operator is needed: a replica that missed writes while it
// was down, its hints lost, gets them from the background scheduler's repairs, and the
// ranges are recorded repaired with all their replicas.
func TestBackgroundRepairBringsAReplicaBackWithoutAnOperator(t *testing.T) {
	defer func(d time.Duration) { repairBackgroundRetry = d }(repairBackgroundRetry)
	repairBackgroundRetry = time.Second
	ctx := context.Background()
	nodeConfig := func(host, seed string) config.Config {
		c := clusterConfig(t, host, seed)
		c.Engine, c.RepairPeriod = "lsm", 3*time.Second
		return c
	}
	n1, n2, n3, cfg3 := startTrio(t, nodeConfig)
	defer n1.Shutdown(ctx)
	defer n2.Shutdown(ctx)
	id3 := takeDown(t, n1, n3)
	c1 := redis.NewClient(&redis.Options{Addr: n1.Addr()})
	defer c1.Close()
	const keys = 50
	for i := range keys {
		if err := c1.Set(ctx, fmt.Sprint("b", i), "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	dropHints(t, n1, id3)
	n3, err := Start(cfg3, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer n3.Shutdown(ctx)
	t0 := time.Now()
	eventuallyFor(t, time.Minute, "the background repairs bring n3 every key", func() bool {
		for i := range keys {
			if _, found, _ := n3.cluster.handler.Engine.Get(ring.EngineKey([]byte(fmt.Sprint("b", i)))); !found {
				return false
			}
		}
		return true
	})
	t.Logf("n3 had every key %v after its restart", time.Since(t0))
	if _, ok := n3.repairProgress(); ok {
		t.Fatal("an operator's repair ran: the test would prove nothing")
	}
	eventuallyFor(t, time.Minute, "every node records its ranges repaired", func() bool {
		for _, n := range []*Node{n1, n2, n3} {
			r := n.cluster.machine.Ring()
			for i := range r.RangeCount() {
				if n.purge.last(r.RangeStart(i), r.RangeEnd(i)) == 0 {
					return false
				}
			}
		}
		return true
	})
}
