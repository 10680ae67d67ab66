package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
)

// devFlags are the settings of `kura dev`.
type devFlags struct {
	hosts    int
	engines  string
	dataDir  string
	basePort int
	rf       int
	extra    []string
	wrappers []string // commands nodes run under: "CMD" for all, "ENGINE=CMD" for one engine
	timeout  time.Duration
	// stopTimeout: how long the nodes get to shut down before stopDev kills them.
	stopTimeout time.Duration
	procs       int // GOMAXPROCS of every node; 0 divides the machine's cores among them
	secure      bool
	sec         *devSecurity // what --secure set up
}

// devNode is one kura process of a local cluster.
type devNode struct {
	name, engine, host             string
	hostNum                        int // 1..hosts: what {host} in --data-dir, --server-flag and --node-wrapper stands for
	client, admin, gossip, internd string
	cmd                            *exec.Cmd
	log                            *os.File
}

func newDevCmd() *cobra.Command {
	f := &devFlags{}
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Run a local cluster: one kura process per host and engine, on loopback",
		Long: `dev starts a cluster on this machine: for each of --hosts hosts (labelled host1..hostN,
so that placement treats them as different machines) one kura process per engine in
--engines. It waits until every node sees the full ring, prints how to connect, and stops
them all on Ctrl-C. Data and logs stay in --data-dir, so running the same command again
restarts the same cluster. With more than one engine the nodes use engine-diverse
placement (every key gets a replica on each engine) and engine-aware routing.

{host} in --data-dir, --server-flag and --node-wrapper stands for the host's number, so that each host
can have its own disks, as real hosts do (e.g. the emulated disks hdd1..hdd3 of
scripts/emulate-disks.sh). {engine} in --server-flag stands for the node's engine, for
flags that need a directory per node.

Ports: node k (counting from 0) serves RESP on base+k, admin HTTP on base+1000+k, gossip
on base+2000+k and internode requests on base+3000+k.`,
		Example: `  kura dev --hosts 3 --engines lsm
  kura dev --hosts 3 --engines lsm,btree,memory --data-dir /tmp/kura-dev
  kura dev --hosts 3 --data-dir '/mnt/kura-hdd{host}/dev' \
      --node-wrapper 'scripts/emulate-disks.sh run --disk hdd{host} --memory 256M --'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDev(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.hosts, "hosts", 3, "number of hosts (labels host1..hostN)")
	fl.StringVar(&f.engines, "engines", "lsm", "comma-separated engines to run on every host: one process each")
	fl.IntVar(&f.procs, "procs-per-node", 0, "GOMAXPROCS of every node; 0 gives each node its share of this machine's cores (at least 1), since the nodes share them; a GOMAXPROCS environment variable overrides it")
	fl.StringVar(&f.dataDir, "data-dir", "kura-dev", "directory for every node's data and log; {host} stands for the host's number")
	fl.IntVar(&f.basePort, "base-port", 6380, "RESP port of the first node (see above)")
	fl.IntVar(&f.rf, "replication-factor", 3, "copies of every key")
	fl.BoolVar(&f.secure, "secure", false, "turn every protection on: a CA and node certificates, clients over TLS only (on the RESP ports) with a password, the admin endpoints over HTTPS behind it, mutual TLS between nodes and encrypted gossip; all kept in --data-dir's certs/ (the password in certs/password)")
	fl.StringArrayVar(&f.extra, "server-flag", nil, "extra flag for every `kura server`, e.g. --server-flag=--durability=periodic; {host} stands for the host's number and {engine} for the node's engine (a directory per node: --server-flag=--hints-dir=/mnt/log{host}/hints-{engine})")
	fl.StringArrayVar(&f.wrappers, "node-wrapper", nil, "command nodes run under, split on spaces, e.g. \"scripts/emulate-disks.sh run --disk hdd --memory 256M --\" (then put --data-dir on the emulated disk); ENGINE=COMMAND applies to that engine's nodes only and wins over a plain one (repeatable); {host} stands for the host's number")
	fl.DurationVar(&f.timeout, "ready-timeout", 60*time.Second, "how long to wait for the ring to be ready")
	fl.DurationVar(&f.stopTimeout, "stop-timeout", 30*time.Second, "how long the nodes get to shut down on Ctrl-C before they are killed")
	addDevSubcommands(cmd)
	return cmd
}

func runDev(ctx context.Context, out io.Writer, f *devFlags) error {
	nodes, err := planDev(f)
	if err != nil {
		return err
	}
	if f.procs < 0 {
		return fmt.Errorf("dev: --procs-per-node %d is negative", f.procs)
	}
	if f.procs == 0 {
		f.procs = max(1, runtime.GOMAXPROCS(0)/len(nodes)) // GOMAXPROCS(0) heeds cgroup CPU limits
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if f.secure {
		if f.sec, err = prepareDevSecurity(f.dataDir); err != nil {
			return err
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() { stopDev(nodes, f.stopTimeout) }() // the nodes as they are when it stops
	for i, n := range nodes {
		seed := ""
		if i > 0 {
			seed = nodes[0].gossip
		}
		if err := startDevNode(exe, f, n, seed); err != nil {
			return err
		}
		if i == 0 { // the seed first, so that the others have someone to join
			if err := waitHealthy(ctx, n, f.timeout); err != nil {
				return err
			}
		}
	}
	if err := waitRing(ctx, nodes, f.timeout); err != nil {
		return err
	}
	printDev(out, f, nodes)
	nodes = serveDevRequests(ctx, out, exe, f, nodes) // until Ctrl-C
	fmt.Fprintln(out, "stopping the cluster")
	return nil
}

func planDev(f *devFlags) ([]*devNode, error) {
	engines := strings.Split(f.engines, ",")
	if f.hosts < 1 || len(engines) == 0 {
		return nil, errors.New("dev: need at least one host and one engine")
	}
	var nodes []*devNode
	k := 0
	for h := 1; h <= f.hosts; h++ {
		for _, e := range engines {
			e = strings.TrimSpace(e)
			switch e {
			case "lsm", "btree", "memory":
			default:
				return nil, fmt.Errorf("dev: unknown engine %q (want lsm, btree or memory)", e)
			}
			port := func(off int) string { return "127.0.0.1:" + strconv.Itoa(f.basePort+off+k) }
			nodes = append(nodes, &devNode{name: fmt.Sprintf("host%d-%s", h, e), engine: e, host: fmt.Sprintf("host%d", h), hostNum: h,
				client: port(0), admin: port(1000), gossip: port(2000), internd: port(3000)})
			k++
		}
	}
	return nodes, nil
}

// wrapperFor returns the --node-wrapper command for a node of engine: the last one
// given as "ENGINE=COMMAND" for it, else the last plain one, else "".
func wrapperFor(wrappers []string, engine string) string {
	plain, own := "", ""
	for _, w := range wrappers {
		if cmd, ok := strings.CutPrefix(w, engine+"="); ok {
			own = cmd
		} else if e, _, ok := strings.Cut(w, "="); !ok || strings.ContainsAny(e, " /") {
			plain = w // no engine prefix (an "=" inside the command does not make one)
		}
	}
	if own != "" {
		return own
	}
	return plain
}

// mixed reports whether engines (comma-separated) names more than one engine.
func mixed(engines string) bool {
	var seen []string
	for _, e := range strings.Split(engines, ",") {
		if e = strings.TrimSpace(e); !slices.Contains(seen, e) {
			seen = append(seen, e)
		}
	}
	return len(seen) > 1
}

// forHost replaces {host} in s with host h's number.
func forHost(s string, h int) string { return strings.ReplaceAll(s, "{host}", strconv.Itoa(h)) }

func startDevNode(exe string, f *devFlags, n *devNode, seed string) error {
	root := forHost(f.dataDir, n.hostNum)
	dir := filepath.Join(root, n.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	logf, err := os.OpenFile(filepath.Join(root, n.name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	args := []string{"server", "--engine", n.engine, "--data-dir", dir, "--listen", n.client,
		"--admin-listen", n.admin, "--gossip-listen", n.gossip, "--internode-listen", n.internd,
		"--host", n.host, "--replication-factor", strconv.Itoa(f.rf)}
	if seed != "" {
		args = append(args, "--seeds", seed)
	}
	if f.sec != nil {
		sf, err := f.sec.nodeFlags(n.host, n.client)
		if err != nil {
			return err
		}
		args = append(args, sf...)
	}
	if mixed(f.engines) {
		// The heterogeneous cluster (seed 000): a replica on each engine per key, and
		// requests sent to the engines that serve them cheaply. --server-flag overrides.
		args = append(args, "--placement", "engine-diverse", "--routing", "engine-aware")
	}
	for _, x := range f.extra {
		args = append(args, strings.ReplaceAll(forHost(x, n.hostNum), "{engine}", n.engine))
	}
	name := exe
	if w := strings.Fields(forHost(wrapperFor(f.wrappers, n.engine), n.hostNum)); len(w) > 0 {
		name, args = w[0], append(append(w[1:len(w):len(w)], exe), args...)
	}
	n.cmd, n.log = exec.Command(name, args...), logf
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	// Each node runs in a process group of its own, which stopDev signals whole: a
	// --node-wrapper that runs the node as its child instead of exec'ing it would
	// otherwise take the signal alone and leave the node running, holding its ports.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if os.Getenv("GOMAXPROCS") == "" {
		// Go sizes each process for the whole machine; N of them then keep N times the
		// threads spinning for work and waking each other across cores. On 2 cores three
		// nodes of one proc each served 10% more QUORUM reads than with two each
		// (docs/benchmarks.md at 77be0fa).
		n.cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(f.procs))
	}
	if err := n.cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("dev: start %s: %w", n.name, err)
	}
	return nil
}

// waitHealthy waits until n answers /healthz.
func waitHealthy(ctx context.Context, n *devNode, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		req, err := adminCreds.request(ctx, http.MethodGet, n.admin, "/healthz", nil)
		if err != nil {
			return err
		}
		if resp, err := adminCreds.do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if n.cmd.ProcessState != nil {
			return fmt.Errorf("dev: %s exited; see its log", n.name)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("dev: %s not healthy after %v; see %s.log", n.name, limit, n.name)
}

// waitRing waits until every node sees every node normal and up.
func waitRing(ctx context.Context, nodes []*devNode, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ready := true
		for _, n := range nodes {
			st, err := fetchStatus(ctx, n.admin)
			if err != nil || len(st.Members) != len(nodes) {
				ready = false
				break
			}
			for _, m := range st.Members {
				ready = ready && m.Up && m.Status == "normal"
			}
		}
		if ready {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("dev: the ring was not ready after %v; see the logs in the data directory", limit)
}

func printDev(out io.Writer, f *devFlags, nodes []*devNode) {
	fmt.Fprintf(out, "kura dev: %d nodes on %d hosts ready (replication factor %d), data in %s\n\n",
		len(nodes), f.hosts, f.rf, f.dataDir)
	if s := f.sec; s != nil {
		printDevSecure(out, s, nodes)
		return
	}
	for _, n := range nodes {
		fmt.Fprintf(out, "  %-16s redis-cli -p %s    admin %s    pid %d\n", n.name,
			strings.TrimPrefix(n.client, "127.0.0.1:"), n.admin, n.cmd.Process.Pid)
	}
	fmt.Fprintf(out, "\n  kura admin status --admin %s\n  kura bench run --target resp://%s -w read-heavy\n"+
		"  kura dev add 1 --data-dir %s      (grow)\n  kura dev remove %s --data-dir %s      (shrink)\n\nCtrl-C stops the cluster.\n",
		nodes[0].admin, nodes[0].client, f.dataDir, nodes[len(nodes)-1].name, f.dataDir)
}

// stopDev sends SIGTERM to every node's process group (the node, or its wrapper with what
// the wrapper started in that group) and waits until every process of each node's tree,
// as it was when stopping began, is gone, killing what is left of it after timeout. The
// tree, not only the group: a wrapper may start the node in a group of its own
// (emulate-disks.sh does, to pass signals on as a terminal would), and killing the
// wrapper alone once left B+tree nodes running, holding their ports.
func stopDev(nodes []*devNode, timeout time.Duration) {
	trees := make([][]int, len(nodes))
	children := childrenByParent()
	for i, n := range nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			trees[i] = processTree(children, n.cmd.Process.Pid)
			_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
		}
	}
	deadline := time.Now().Add(timeout)
	for i, n := range nodes {
		if n.cmd == nil || n.cmd.Process == nil {
			continue
		}
		done := make(chan struct{})
		go func() { _ = n.cmd.Wait(); close(done) }()
		for anyAlive(trees[i]) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if anyAlive(trees[i]) {
			for _, p := range trees[i] {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
			for end := time.Now().Add(5 * time.Second); anyAlive(trees[i]) && time.Now().Before(end); {
				time.Sleep(50 * time.Millisecond)
			}
		}
		<-done
		n.log.Close()
	}
}

// childrenByParent maps every process's parent to its children, from /proc.
func childrenByParent() map[int][]int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := procStat(p); len(f) >= 2 {
			if ppid, err := strconv.Atoi(f[1]); err == nil {
				children[ppid] = append(children[ppid], p)
			}
		}
	}
	return children
}

// processTree returns pid and every descendant of it in children (childrenByParent).
func processTree(children map[int][]int, pid int) []int {
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree
}

// anyAlive reports whether a process of pids is running. Zombies do not count: an
// orphan that has exited waits for whichever process adopted it to reap it, which in a
// container may never happen.
func anyAlive(pids []int) bool {
	for _, p := range pids {
		if f := procStat(p); len(f) > 0 && f[0] != "Z" {
			return true
		}
	}
	return false
}

// procStat returns the fields of /proc/PID/stat after the command name (state, ppid,
// pgrp, ...), or nil when there is no such process.
func procStat(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')') // the name may hold spaces and parentheses
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// printDevSecure is printDev's text for a --secure cluster: how to connect with TLS and
// the password.
func printDevSecure(out io.Writer, s *devSecurity, nodes []*devNode) {
	fmt.Fprintf(out, "  TLS everywhere; the default user's password is in %s\n\n", filepath.Join(s.dir, devPasswordFile))
	for _, n := range nodes {
		fmt.Fprintf(out, "  %-16s redis-cli -p %s --tls --cacert %s --pass \"$(cat %s)\"    admin https://%s    pid %d\n", n.name,
			strings.TrimPrefix(n.client, "127.0.0.1:"), s.ca(), filepath.Join(s.dir, devPasswordFile), n.admin, n.cmd.Process.Pid)
	}
	fmt.Fprintf(out, "\n  KURA_PASSWORD=\"$(cat %s)\" kura admin status --admin %s --cacert %s\n"+
		"  kura bench run -w read-heavy --target 'resps://%s?cacert=%s&password=...'\n\nCtrl-C stops the cluster.\n",
		filepath.Join(s.dir, devPasswordFile), nodes[0].admin, s.ca(), nodes[0].client, s.ca())
}
