package lint

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestScriptsPassTheirOwnTests runs the shell tests kept next to scripts (they need no
// root: emulate-disks_test.sh checks the disk emulation against fake cgroup trees), and
// checks every script's syntax with bash -n.
func TestScriptsPassTheirOwnTests(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	root := repoRoot(t)
	scripts, err := filepath.Glob(filepath.Join(root, "scripts", "*.sh"))
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts found: %v", err)
	}
	for _, s := range scripts {
		if out, err := exec.Command(bash, "-n", s).CombinedOutput(); err != nil {
			t.Errorf("bash -n %s: %v\n%s", filepath.Base(s), err, out)
		}
	}
	tests, _ := filepath.Glob(filepath.Join(root, "scripts", "*_test.sh"))
	for _, s := range tests {
		if out, err := exec.Command(bash, s).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", filepath.Base(s), err, out)
		}
	}
}
