package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kuradb/kura/internal/cluster"
	"github.com/kuradb/kura/internal/engine/catalog"
	"github.com/kuradb/kura/internal/hint"
	"github.com/kuradb/kura/internal/ring"
	"github.com/kuradb/kura/internal/row"
)

// serve starts the endpoints of cfg on a free port and returns a function that GETs or
// POSTs a path and returns the status and body.
func serve(t *testing.T, cfg Config) func(method, path string) (int, string) {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	cfg.Engine, cfg.Registry = eng, NewRegistry(eng)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, cfg)
	t.Cleanup(func() { s.Close(context.Background()) })
	return func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+s.Addr()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
}

// Each endpoint answers what its backend says, and says clearly what a node that is not
// in cluster mode, or not tiered, cannot do.
func TestEndpointsAnswerForTheirBackend(t *testing.T) {
	draining, clustered := false, false
	rebuildErr := errors.New("already refilling")
	do := serve(t, Config{
		Draining: func() bool { return draining },
		Cluster: func() (ClusterStatus, bool) {
			return ClusterStatus{Self: "n1", ReplicationFactor: 3}, clustered
		},
		Rebuild: func() (bool, error) { return clustered, rebuildErr },
	})
	for _, tc := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/healthz", 200, "ok"},
		{"GET", "/cluster", 404, "not in cluster mode"},
		{"POST", "/rebuild", 404, "not in cluster mode"},
		{"GET", "/rebuild", 405, "POST"},
		{"GET", "/tiers", 404, "not tiered"},
		{"GET", "/metrics", 200, "kura_engine_disk_bytes"},
	} {
		if code, body := do(tc.method, tc.path); code != tc.code || !strings.Contains(body, tc.body) {
			t.Errorf("%s %s: %d %q, want %d and %q", tc.method, tc.path, code, body, tc.code, tc.body)
		}
	}
	draining, clustered = true, true
	if code, _ := do("GET", "/healthz"); code != 503 {
		t.Errorf("healthz while draining: %d, want 503", code)
	}
	if code, body := do("GET", "/cluster"); code != 200 || !strings.Contains(body, `"self":"n1"`) {
		t.Errorf("cluster: %d %q", code, body)
	}
	if code, body := do("POST", "/rebuild"); code != 409 || !strings.Contains(body, "already refilling") {
		t.Errorf("rebuild refused: %d %q", code, body)
	}
}

// The status lists every member with its ownership, the ring's tokens in order and the
// hints by replica; the coordinator counts as up in its own view.
func TestStatusDescribesTheView(t *testing.T) {
	members := []cluster.Member{
		{ID: "b", Host: "h2", Role: ring.ReadOptimized, Tokens: []ring.Token{0}, Up: true, Status: cluster.Normal},
		{ID: "a", Host: "h1", Role: ring.WriteOptimized, Tokens: []ring.Token{100, -100}, Status: cluster.Normal},
	}
	r, err := ring.New([]ring.Node{{ID: "a", Host: "h1", Tokens: []ring.Token{100, -100}}, {ID: "b", Host: "h2", Tokens: []ring.Token{0}}})
	if err != nil {
		t.Fatal(err)
	}
	st := Status(View{Self: "a", ReplicationFactor: 2, Strategy: ring.Simple{}, Ring: r, Members: members,
		Lagging: func(id ring.NodeID) bool { return id == "b" },
		Hints:   map[string]hint.Stats{"c": {Hints: 2}, "b": {Hints: 5, Bytes: 50}}})
	if len(st.Tokens) != 3 || st.Tokens[0].Token != -100 || st.Tokens[2].Token != 100 {
		t.Errorf("tokens %+v, want three in order", st.Tokens)
	}
	if len(st.Hints) != 2 || st.Hints[0].Replica != "b" || st.Hints[0].Hints != 5 {
		t.Errorf("hints %+v, want b then c", st.Hints)
	}
	for _, m := range st.Members {
		switch {
		case m.ID == "a" && (!m.Up || m.Behind || m.Role != "write-optimized" || m.Tokens != 2):
			t.Errorf("self %+v", m)
		case m.ID == "b" && (!m.Behind || m.OwnsRepl != 0.5):
			t.Errorf("b %+v: want behind, with half of the replicated data (every row, at RF 2 of 2)", m)
		}
	}
}

// POST /topology hands the operator's request to the node and answers its report, with a
// status per kind of failure: 404 for a node that does not follow the metadata log, 503
// while the log cannot commit, 409 for a change the cluster refuses, 400 for a body that
// is not a request.
func TestTopologyEndpoint(t *testing.T) {
	var got TopologyRequest
	answer := func(TopologyRequest) (string, error) { return "", nil }
	cfg := Config{Draining: func() bool { return false }, Cluster: func() (ClusterStatus, bool) { return ClusterStatus{}, true },
		Rebuild: func() (bool, error) { return true, nil },
		Topology: func(r TopologyRequest) (string, error) {
			got = r
			return answer(r)
		}}
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	cfg.Engine, cfg.Registry = eng, NewRegistry(eng)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, cfg)
	t.Cleanup(func() { s.Close(context.Background()) })
	post := func(body string) (int, string) {
		resp, err := http.Post("http://"+s.Addr()+"/topology", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	answer = func(r TopologyRequest) (string, error) { return "started " + r.Op + "\n", nil }
	if code, body := post(`{"op":"removenode","nodes":["n3"]}`); code != 200 || body != "started removenode\n" || got.Nodes[0] != "n3" {
		t.Errorf("removenode: %d %q, request %+v", code, body, got)
	}
	for _, tc := range []struct {
		err  error
		code int
	}{
		{ErrNoTopology, 404},
		{fmt.Errorf("%w: 1 of 3 voters reachable", ErrTopologyUnavailable), 503},
		{errors.New("meta: too few live replicas"), 409},
	} {
		answer = func(TopologyRequest) (string, error) { return "", tc.err }
		if code, body := post(`{"op":"decommission"}`); code != tc.code || !strings.Contains(body, tc.err.Error()) {
			t.Errorf("%v: %d %q, want %d", tc.err, code, body, tc.code)
		}
	}
	if code, _ := post(`{"op":`); code != 400 {
		t.Errorf("a malformed request: %d, want 400", code)
	}
	if resp, err := http.Get("http://" + s.Addr() + "/topology"); err != nil || resp.StatusCode != 405 {
		t.Errorf("GET /topology: %v %v, want 405", resp.StatusCode, err)
	}
}

// The membership collector exports the epoch, what each peer streamed to the node, what
// its replica streamed out, and the change's transfers by state.
func TestMembershipCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(MembershipCollector(func() MembershipStats {
		return MembershipStats{Epoch: 7, SentBytes: 300, Transfers: 5, TransfersDone: 2,
			Received: map[string]PeerStream{"n2": {Bytes: 1000, Ranges: 3, Failures: 1}}}
	}))
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				name += "/" + l.GetValue()
			}
			got[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	for name, want := range map[string]float64{"kura_metadata_epoch": 7, "kura_stream_received_bytes_total/n2": 1000,
		"kura_stream_received_ranges_total/n2": 3, "kura_stream_failures_total/n2": 1, "kura_stream_sent_bytes_total": 300,
		"kura_membership_change_transfers/done": 2, "kura_membership_change_transfers/pending": 3} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v (all: %v)", name, got[name], want, got)
		}
	}
}

// The repair marks of the hint store (hints dropped for a replica) are in the status, by
// replica with their spans and share of the ring, and in two gauges per replica, gone
// once the marks are cleared.
func TestRepairMarksInStatusAndMetrics(t *testing.T) {
	hints, err := hint.Open(t.TempDir(), hint.Options{MaxBytes: 1}) // refuses every hint
	if err != nil {
		t.Fatal(err)
	}
	defer hints.Close()
	now := time.Now()
	for _, k := range []string{"k808", "k71", "k488"} { // buckets 101, 103 and 0
		if err := hints.Add("n2", row.Mutation{Key: []byte(k)}, now); !errors.Is(err, hint.ErrFull) {
			t.Fatalf("add %s: %v, want ErrFull", k, err)
		}
	}
	reg := prometheus.NewRegistry()
	NewClusterMetrics(reg, hints, ring.WriteOptimized)
	gauges := func() map[string]float64 {
		got := map[string]float64{}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if !strings.HasPrefix(mf.GetName(), "kura_hints_repair_") {
				continue
			}
			for _, m := range mf.GetMetric() {
				got[mf.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		return got
	}
	got := gauges()
	if got["kura_hints_repair_marked_spans/n2"] != 3 || got["kura_hints_repair_marked_ring_share/n2"] != 3.0/hint.MarkBuckets || len(got) != 2 {
		t.Errorf("repair gauges %v, want 3 spans covering 3/4096 of the ring for n2", got)
	}
	st := Status(View{Self: "n1", Marks: map[string][]hint.TokenSpan{"n2": hints.Marked("n2"), "n3": nil}})
	if len(st.Repairs) != 1 || st.Repairs[0].Replica != "n2" || len(st.Repairs[0].Spans) != 3 ||
		st.Repairs[0].Share != 3.0/hint.MarkBuckets || st.Repairs[0].Spans[0].Start != int64(ring.MinToken) {
		t.Errorf("repairs %+v, want n2's three spans, the first from the ring's start", st.Repairs)
	}
	if _, err := hints.ClearMarks("n2", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := gauges(); len(got) != 0 {
		t.Errorf("repair gauges after the marks were cleared: %v", got)
	}
}

// With Auth set, every endpoint but /metrics and /healthz needs the credentials of a user
// allowed the admin category: none or wrong ones get 401, a user without the permission
// 403, and nothing they asked for runs.
func TestAdminEndpointsRefuseUnauthenticatedChanges(t *testing.T) {
	eng, err := catalog.Open("memory", t.TempDir(), catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	rebuilds := 0
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Serve(ln, Config{Engine: eng, Registry: NewRegistry(eng), Draining: func() bool { return false },
		Rebuild: func() (bool, error) { rebuilds++; return true, nil },
		Auth: func(user, pass, _ string) error {
			switch {
			case user == "root" && pass == "s3cret":
				return nil
			case user == "reader" && pass == "pw":
				return errors.New("admin: user reader has no permissions to run admin commands")
			}
			return ErrUnauthenticated
		}})
	t.Cleanup(func() { s.Close(context.Background()) })
	do := func(method, path, user, pass string) int {
		req, _ := http.NewRequest(method, "http://"+s.Addr()+path, nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		method, path, user, pass string
		want                     int
	}{
		{"GET", "/healthz", "", "", http.StatusOK},
		{"GET", "/metrics", "", "", http.StatusOK},
		{"POST", "/rebuild", "", "", http.StatusUnauthorized},
		{"POST", "/rebuild", "root", "wrong", http.StatusUnauthorized},
		{"POST", "/rebuild", "reader", "pw", http.StatusForbidden},
		{"GET", "/debug/store", "", "", http.StatusUnauthorized},
		{"GET", "/debug/pprof/", "", "", http.StatusUnauthorized},
		{"POST", "/topology", "nobody", "x", http.StatusUnauthorized},
	} {
		if got := do(tc.method, tc.path, tc.user, tc.pass); got != tc.want {
			t.Errorf("%s %s as %q: %d, want %d", tc.method, tc.path, tc.user, got, tc.want)
		}
	}
	if rebuilds != 0 {
		t.Fatalf("%d rebuilds ran without valid credentials", rebuilds)
	}
	if got := do("POST", "/rebuild", "root", "s3cret"); got != http.StatusOK || rebuilds != 1 {
		t.Fatalf("an admin's rebuild: %d, %d rebuilds", got, rebuilds)
	}
}
