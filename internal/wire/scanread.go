package wire

import "fmt"

// MethodScanRead asks a replica for one page of a token range for a client's scan (SCAN,
// KEYS): a ScanRequest encoded by AppendScanReadRequest -> ScanResponse. It differs from
// MethodScan, which refills and streams use, in one thing: a replica that is refilling
// (a restarted in-memory node pulling back its rows) refuses it, as it refuses reads,
// since its page could lack keys it acknowledged before. A node that predates it answers
// with an unknown method error, which the coordinator names in its reply.
const MethodScanRead uint16 = 6

// ScanReadVersion is the format of MethodScanRead's request, which carries its own
// version byte (the other messages' Version is not its). The response is a ScanResponse.
const ScanReadVersion byte = 1

// AppendScanReadRequest appends the encoding of m as MethodScanRead's request to dst.
func AppendScanReadRequest(dst []byte, m *ScanRequest) []byte {
	return appendScanBody(append(dst, ScanReadVersion), m)
}

// DecodeScanReadRequest parses MethodScanRead's request as DecodeScanRequest parses
// MethodScan's: Lo and Hi alias b, Rows and Bytes are capped and raised to 1.
func DecodeScanReadRequest(b []byte) (ScanRequest, error) {
	switch {
	case len(b) == 0:
		return ScanRequest{}, fmt.Errorf("%w: empty", ErrCorrupt)
	case b[0] != ScanReadVersion:
		return ScanRequest{}, fmt.Errorf("%w %d of a scan read (this node speaks %d)", ErrVersion, b[0], ScanReadVersion)
	}
	d := &decoder{buf: b[1:]}
	return d.scanRequest()
}
