package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kuradb/kura/internal/bench"
)

// benchCmd runs the kura binary's bench subcommand and returns its combined output.
func benchCmd(t *testing.T, wantOK bool, args ...string) string {
	t.Helper()
	out, err := exec.Command(kuraBin, append([]string{"bench"}, args...)...).CombinedOutput()
	if (err == nil) != wantOK {
		t.Fatalf("kura bench %s: err=%v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestBenchLoadRunAndReportAgainstARealNode(t *testing.T) {
	p := startKura(t, "--engine", "lsm", "--data-dir", t.TempDir())
	dir := t.TempDir()
	common := []string{"--target", "resp://" + p.addr, "-w", "read-heavy", "--records", "300",
		"--threads", "4", "--progress", "lines", "--label", "kura-lsm"}
	out := benchCmd(t, true, append([]string{"load", "--out", filepath.Join(dir, "load")}, common...)...)
	if !strings.Contains(out, "INSERT") || !strings.Contains(out, "300 ops") {
		t.Errorf("load output:\n%s", out)
	}
	out = benchCmd(t, true, append([]string{"run", "--operations", "1000", "--rate", "2000",
		"--out", filepath.Join(dir, "run")}, common...)...)
	if !strings.Contains(out, "open loop") || !strings.Contains(out, "[run read-heavy]") ||
		!strings.Contains(out, "service time") {
		t.Errorf("run output:\n%s", out)
	}
	res, err := bench.LoadResult(filepath.Join(dir, "run"))
	if err != nil {
		t.Fatal(err)
	}
	read, _ := res.Op("READ")
	if res.Ops != 1000 || res.Errors != 0 || read.NotFound != 0 || res.Label != "kura-lsm" || res.TargetRateOps != 2000 {
		t.Errorf("run result: %d ops, %d errors, %d not found, label %q, rate %v",
			res.Ops, res.Errors, read.NotFound, res.Label, res.TargetRateOps)
	}
	for _, f := range []string{"throughput.png", "latency.svg", "series.csv", "summary.csv"} {
		if _, err := os.Stat(filepath.Join(dir, "run", f)); err != nil {
			t.Errorf("run output lacks %s: %v", f, err)
		}
	}
	rep := filepath.Join(dir, "report")
	benchCmd(t, true, "report", dir, "--out", rep)
	md, err := os.ReadFile(filepath.Join(rep, "report.md"))
	if err != nil || !strings.Contains(string(md), "kura-lsm") || !strings.Contains(string(md), "read-heavy") {
		t.Errorf("report.md (%v):\n%s", err, md)
	}
}

func TestBenchFailsClearlyOnBadInput(t *testing.T) {
	p := startKura(t, "--engine", "memory", "--data-dir", t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--target", "127.0.0.1:1", "--operations", "1"}, "connecting thread 0"},
		{[]string{"run", "--target", p.addr, "-w", "nosuch"}, "unknown workload"},
		{[]string{"run", "--target", p.addr, "-p", "zipfianconstant=1"}, "zipfianconstant"},
		{[]string{"run", "--target", p.addr, "--consistency", "QUORUM"}, "KURA.CONSISTENCY"},
		{[]string{"report", t.TempDir()}, "no result"},
	} {
		out := benchCmd(t, false, append(tc.args, "--out", t.TempDir())...)
		if !strings.Contains(out, tc.want) {
			t.Errorf("kura bench %v: output lacks %q:\n%s", tc.args, tc.want, out)
		}
	}
}

// Workload E's scans run against a real node: SCAN in token order from the start key's
// token, then the records read.
func TestBenchRunsWorkloadEAgainstARealNode(t *testing.T) {
	p := startKura(t, "--engine", "memory", "--data-dir", t.TempDir())
	common := []string{"--target", "resp://" + p.addr, "-w", "e", "--records", "200", "--progress", "none", "--plots=false"}
	benchCmd(t, true, append([]string{"load", "--out", t.TempDir()}, common...)...)
	out := benchCmd(t, true, append([]string{"run", "--operations", "200", "--out", t.TempDir()}, common...)...)
	if !strings.Contains(out, "SCAN") || !strings.Contains(out, " 0 errors") {
		t.Errorf("run output:\n%s", out)
	}
}

func TestBenchNoopTargetMeasuresTheClientAlone(t *testing.T) {
	out := benchCmd(t, true, "run", "--target", "noop", "-w", "ping", "--operations", "50000",
		"--threads", "4", "--progress", "none", "--plots=false", "--out", t.TempDir())
	if !strings.Contains(out, "PING") || !strings.Contains(out, "50000 ops") {
		t.Errorf("noop output:\n%s", out)
	}
}

func TestBenchWritesTheClientsCPUProfile(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "client.pprof")
	benchCmd(t, true, "run", "--target", "noop", "-w", "ping", "--operations", "20000",
		"--threads", "2", "--progress", "none", "--plots=false", "--out", t.TempDir(), "--cpu-profile", prof)
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b { // pprof profiles are gzipped protobufs
		t.Fatalf("%s is not a pprof profile: %d bytes", prof, len(b))
	}
}
