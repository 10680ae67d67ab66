package transport

import (
	"bufio"
	"errors"
	"io"
)

// readBufferBytes is the size of a connection's read buffer: many small frames are read
// with one syscall; payloads larger than it are read straight into their own slice.
const readBufferBytes = 64 << 10

// Decoder reads frames from a byte stream. It applies the checks of Decode and reads
// payloads into fresh slices that the caller owns. It is not safe for concurrent use.
type Decoder struct {
	r               *bufio.Reader
	maxPayloadBytes int
	maxVersion      byte // the newest version it reads (a peer configured as an older one reads less)
}

// NewDecoder returns a decoder that reads from r through a buffer, takes frames of either
// version and rejects payloads larger than maxPayloadBytes.
func NewDecoder(r io.Reader, maxPayloadBytes int) *Decoder {
	return newDecoder(r, maxPayloadBytes, Version)
}

func newDecoder(r io.Reader, maxPayloadBytes int, maxVersion byte) *Decoder {
	return &Decoder{r: bufio.NewReaderSize(r, readBufferBytes), maxPayloadBytes: maxPayloadBytes, maxVersion: maxVersion}
}

// Next reads one frame. It returns io.EOF if the stream ends cleanly between frames and
// io.ErrUnexpectedEOF if it ends inside one; any error is final, since the stream cannot be
// resynchronized. On ErrFrameTooLarge the returned frame carries the header's type,
// method and ID (see Decode).
func (d *Decoder) Next() (Frame, error) {
	v, err := d.r.Peek(1)
	if err != nil {
		return Frame{}, err // io.EOF: the stream ended between frames
	}
	// The version byte alone settles the header's size, and rejects a frame this peer
	// does not read as soon as it arrives (as Decode does).
	if err := checkVersion(v[0], d.maxVersion); err != nil {
		return Frame{}, err
	}
	hs := headerSize(v[0])
	h, err := d.r.Peek(hs)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	f, size, err := parseHeader(h, d.maxPayloadBytes)
	if err != nil {
		return f, err
	}
	d.r.Discard(hs)
	if size == 0 {
		return f, nil
	}
	f.Payload = make([]byte, size)
	if _, err := io.ReadFull(d.r, f.Payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return f, nil
}
