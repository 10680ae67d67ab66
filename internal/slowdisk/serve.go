package slowdisk

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FileName is the name of the served image inside the mount point.
const FileName = "disk"

// Server serves one image file at a mount point, as FileName, with a Disk's timing.
type Server struct {
	fuse  *fuse.Server
	image *os.File
	mu    sync.Mutex // guards disk
	disk  *Disk
}

// Serve mounts image (a file that exists) at mountpoint (a directory) and serves it until
// Unmount. Every request waits until the modelled disk would have completed it; the
// image's own I/O is plain buffered I/O, so its speed does not show. The file is served
// with FUSE's direct I/O: nothing of it is cached above the model (the loop device and
// filesystem on top of it cache as they would on a disk). Serve needs root (or
// fusermount) and /dev/fuse.
func Serve(image, mountpoint string, cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("slowdisk: %w", err)
	}
	s := &Server{image: f, disk: New(cfg)}
	root := &fs.Inode{}
	file := &imageNode{s: s}
	opts := &fs.Options{
		MountOptions: fuse.MountOptions{
			FsName: "kura-slowdisk", Name: "slowdisk", DirectMount: true,
			AllowOther: true,    // the loop device reads it from kernel threads
			MaxWrite:   1 << 20, // requests as large as the loop device sends
		},
		OnAdd: func(ctx context.Context) {
			root.AddChild(FileName, root.NewPersistentInode(ctx, file, fs.StableAttr{Mode: syscall.S_IFREG, Ino: 2}), true)
		},
	}
	srv, err := fs.Mount(mountpoint, root, opts)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("slowdisk: mount %s: %w", mountpoint, err)
	}
	s.fuse = srv
	return s, nil
}

// Wait blocks until the file system is unmounted.
func (s *Server) Wait() { s.fuse.Wait() }

// Unmount unmounts the file system (it fails while the file is open, e.g. by a loop
// device) and closes the image.
func (s *Server) Unmount() error {
	if err := s.fuse.Unmount(); err != nil {
		return err
	}
	return s.image.Close()
}

// Stats returns the modelled disk's counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disk.Stats()
}

// wait submits a request to the model and sleeps until it completes.
func (s *Server) wait(off, n int64, write bool) {
	s.mu.Lock()
	now := time.Now()
	done := s.disk.Submit(now, off, n, write)
	s.mu.Unlock()
	time.Sleep(done.Sub(now))
}

// imageNode is the served file.
type imageNode struct {
	fs.Inode
	s *Server
}

var (
	_ fs.NodeOpener    = (*imageNode)(nil)
	_ fs.NodeReader    = (*imageNode)(nil)
	_ fs.NodeWriter    = (*imageNode)(nil)
	_ fs.NodeGetattrer = (*imageNode)(nil)
	_ fs.NodeFsyncer   = (*imageNode)(nil)
	_ fs.NodeFlusher   = (*imageNode)(nil)
)

func (n *imageNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	return nil, fuse.FOPEN_DIRECT_IO, 0
}

func (n *imageNode) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fi, err := n.s.image.Stat()
	if err != nil {
		return fs.ToErrno(err)
	}
	out.Mode = syscall.S_IFREG | 0o600
	out.Size = uint64(fi.Size())
	out.Blocks = (out.Size + 511) / 512
	return 0
}

func (n *imageNode) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	k, err := n.s.image.ReadAt(dest, off)
	if err != nil && k == 0 && off < n.size() {
		return nil, fs.ToErrno(err)
	}
	if k > 0 {
		n.s.wait(off, int64(k), false)
	}
	return fuse.ReadResultData(dest[:k]), 0
}

func (n *imageNode) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	k, err := n.s.image.WriteAt(data, off)
	if err != nil {
		return uint32(k), fs.ToErrno(err)
	}
	n.s.wait(off, int64(k), true)
	return uint32(k), 0
}

// Fsync costs nothing more: the model has no write cache, every write was on the media
// when it returned. The image itself need not reach the host's disk.
func (n *imageNode) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	return 0
}

func (n *imageNode) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return 0 }

func (n *imageNode) size() int64 {
	fi, err := n.s.image.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}
