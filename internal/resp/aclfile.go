package resp

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kuradb/kura/internal/acl"
)

// The ACL file's I/O; its format is package acl's.

// LoadACLFile replaces reg's users by those of the ACL file at path (the node calls it at
// start). A file that does not parse changes nothing; the error names its line.
func LoadACLFile(reg *acl.Registry, path string) error {
	ch, err := readACLFile(reg, path)
	if err != nil {
		return err
	}
	if _, err := reg.Apply(ch); err != nil {
		return fmt.Errorf("resp: ACL file %s: %w", path, err)
	}
	return nil
}

// readACLFile reads and prepares the ACL file at path (see acl.Registry.PrepareFile).
func readACLFile(reg *acl.Registry, path string) (acl.Change, error) {
	f, err := os.Open(path)
	if err != nil {
		return acl.Change{}, fmt.Errorf("resp: ACL file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, acl.MaxFileBytes+1))
	if err != nil {
		return acl.Change{}, fmt.Errorf("resp: ACL file %s: %w", path, err)
	}
	ch, err := reg.PrepareFile(data)
	if err != nil {
		return acl.Change{}, fmt.Errorf("resp: ACL file %s: %w", path, err)
	}
	return ch, nil
}

// SaveACLFile writes snap to path atomically: a temporary file in the same directory,
// synced, renamed over path, and the directory synced, so that a crash leaves the old
// file or the new one, never a mix.
func SaveACLFile(snap *acl.Snapshot, path string) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = tmp.Chmod(0o600); err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	if _, err = tmp.Write(acl.FormatFile(snap)); err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("resp: saving the ACL file: %w", err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("resp: saving the ACL file: syncing %s: %w", dir, err)
	}
	return nil
}
