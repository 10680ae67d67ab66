package node

import (
	"fmt"
	"os"
	"time"

	"github.com/kuradb/kura/internal/membership"
)

// keyringCheckInterval is how often a node looks at its gossip keyring file for a change.
const keyringCheckInterval = 2 * time.Second

// keyringFile is the gossip keyring file (--gossip-keyring-file) as last read.
type keyringFile struct {
	path    string
	modTime time.Time
	size    int64
}

// readKeyring reads and parses the keyring file at path.
func readKeyring(path string) ([][]byte, keyringFile, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, keyringFile{}, fmt.Errorf("node: gossip keyring: %w", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, keyringFile{}, fmt.Errorf("node: gossip keyring: %w", err)
	}
	keys, err := membership.ParseKeyring(data)
	if err != nil {
		return nil, keyringFile{}, fmt.Errorf("node: %s: %w", path, err)
	}
	return keys, keyringFile{path: path, modTime: st.ModTime(), size: st.Size()}, nil
}

// keysLoop re-reads the keyring file when it changes and installs its keys, so that an
// operator rolls a key without a restart (membership.ParseKeyring). A file that does not
// parse is logged and changes nothing: the node keeps the keys it has.
func (c *clusterNode) keysLoop(f keyringFile) {
	defer c.wg.Done()
	c.every(keyringCheckInterval, func() {
		st, err := os.Stat(f.path)
		if err != nil || (st.ModTime().Equal(f.modTime) && st.Size() == f.size) {
			return
		}
		keys, nf, err := readKeyring(f.path)
		if err != nil {
			c.log.Error("gossip keyring not reloaded; keeping the keys in use", "err", err)
			return
		}
		if err := c.gossip.SetKeys(keys); err != nil {
			c.log.Error("gossip keyring not reloaded; keeping the keys in use", "err", err)
			return
		}
		f = nf
		c.log.Info("gossip keyring reloaded", "file", f.path, "keys", len(keys))
	})
}
