// Command kura-slowdisk serves an image file over FUSE with a hard disk's timing
// (internal/slowdisk), for scripts/emulate-disks.sh's seek model: a loop device on
// the served file gets a disk whose every random I/O costs a seek. Run as root:
//
//	kura-slowdisk --image /var/tmp/kura-disks/hdd.img --mount /var/tmp/kura-disks/fuse-hdd
//
// It serves until SIGINT or SIGTERM, then unmounts (detach any loop device first) and
// prints the modelled disk's counts; --stats writes them to a file every second.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/kuradb/kura/internal/slowdisk"
)

func main() {
	var cfg slowdisk.Config
	image := flag.String("image", "", "image file to serve (must exist)")
	mount := flag.String("mount", "", "directory to mount it on, as "+slowdisk.FileName)
	stats := flag.String("stats", "", "file to write the disk's counts to every second")
	flag.DurationVar(&cfg.Access, "access", slowdisk.DefaultAccess, "seek and rotation time of a request that does not follow the last")
	flag.Float64Var(&cfg.ReadBytesPerSecond, "read-bps", slowdisk.DefaultReadBytesPerSecond, "read transfer rate, bytes a second")
	flag.Float64Var(&cfg.WriteBytesPerSecond, "write-bps", slowdisk.DefaultWriteBytesPerSecond, "write transfer rate, bytes a second")
	flag.Int64Var(&cfg.SequentialGapBytes, "sequential-gap-bytes", slowdisk.DefaultSequentialGapBytes, "a request starting at most this far past the last one's end does not seek")
	flag.Parse()
	if *image == "" || *mount == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: kura-slowdisk --image FILE --mount DIR [flags]")
		flag.PrintDefaults()
		os.Exit(2)
	}
	srv, err := slowdisk.Serve(*image, *mount, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kura-slowdisk:", err)
		os.Exit(1)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			writeStats(*stats, srv.Stats())
		case <-sig:
			writeStats(*stats, srv.Stats())
			for try := 0; ; try++ {
				err := srv.Unmount()
				if err == nil {
					break
				}
				if try == 50 {
					fmt.Fprintln(os.Stderr, "kura-slowdisk: unmount:", err)
					os.Exit(1)
				}
				time.Sleep(100 * time.Millisecond)
			}
			fmt.Fprintln(os.Stderr, format(srv.Stats()))
			return
		}
	}
}

func format(s slowdisk.Stats) string {
	return fmt.Sprintf("reads=%d writes=%d read_bytes=%d write_bytes=%d accesses=%d busy_s=%.3f queued_s=%.3f",
		s.Reads, s.Writes, s.ReadBytes, s.WriteBytes, s.Accesses, s.Busy.Seconds(), s.Queued.Seconds())
}

func writeStats(path string, s slowdisk.Stats) {
	if path == "" {
		return
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(format(s)+"\n"), 0o644); err == nil {
		os.Rename(tmp, path)
	}
}
