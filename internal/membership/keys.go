package membership

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrKeyring is wrapped by every error about gossip keys.
var ErrKeyring = errors.New("membership: gossip keyring")

// A gossip keyring file holds the keys that encrypt and authenticate gossip (memberlist's
// AES-GCM with a keyring), one base64 key of 16, 24 or 32 bytes per line; blank lines and
// lines starting with # are ignored. The first key is the primary: messages are sent with
// it. Every key in the file is accepted on receipt. That is what lets a key roll on a
// running cluster without a partition (docs/design/security.md):
//
//  1. add the new key as a second line on every node (all still send with the old one,
//     all accept both);
//  2. move the new key to the first line on every node (they send with the new one; a
//     node not yet changed still accepts it);
//  3. remove the old key from every node.
//
// A running node re-reads its file when it changes (see Gossip.SetKeys).

// ParseKeyring parses a keyring file: its keys, primary first. It refuses an empty file,
// a key of the wrong size and a key listed twice.
func ParseKeyring(data []byte) ([][]byte, error) {
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: not base64: %w", ErrKeyring, line, err)
		}
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return nil, fmt.Errorf("%w: line %d: a key has 16, 24 or 32 bytes (AES-128, -192, -256), this one %d", ErrKeyring, line, n)
		}
		if slices.ContainsFunc(keys, func(o []byte) bool { return bytes.Equal(o, k) }) {
			return nil, fmt.Errorf("%w: line %d: the key is listed twice", ErrKeyring, line)
		}
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKeyring, err)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no key in the file", ErrKeyring)
	}
	return keys, nil
}

// NewKey returns a new random 32-byte gossip key, base64-encoded as a keyring file holds it.
func NewKey() string {
	k := make([]byte, 32)
	rand.Read(k) // never fails (crypto/rand)
	return base64.StdEncoding.EncodeToString(k)
}

// SetKeys makes keys (primary first, as ParseKeyring returns them) the gossip keyring:
// new keys are installed, the primary is used for sending, and keys no longer listed are
// removed. It fails on a node started without keys: encryption cannot be switched on
// while running, because the others would not understand it.
func (g *Gossip) SetKeys(keys [][]byte) error {
	kr := g.keyring
	if kr == nil {
		return fmt.Errorf("%w: this node started without gossip encryption; restart it with a keyring", ErrKeyring)
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no key given", ErrKeyring)
	}
	for _, k := range keys {
		if err := kr.AddKey(k); err != nil { // a key already installed is kept as is
			return fmt.Errorf("%w: %w", ErrKeyring, err)
		}
	}
	if err := kr.UseKey(keys[0]); err != nil {
		return fmt.Errorf("%w: %w", ErrKeyring, err)
	}
	var drop [][]byte // collected first: RemoveKey rewrites the slice GetKeys returns
	for _, k := range kr.GetKeys() {
		if !slices.ContainsFunc(keys, func(o []byte) bool { return bytes.Equal(o, k) }) {
			drop = append(drop, bytes.Clone(k))
		}
	}
	for _, k := range drop {
		if err := kr.RemoveKey(k); err != nil {
			return fmt.Errorf("%w: %w", ErrKeyring, err)
		}
	}
	return nil
}
