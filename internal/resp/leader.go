package resp

// atLeader runs a flagLeader command (a single-key read-modify-write, key args[1]) so that
// no other flagLeader command on the same key interleaves with it. Work in progress: for
// now it runs the command in place.
func (h *Handler) atLeader(dst []byte, c *command, args [][]byte, s *Session) []byte {
	return c.fn(h, dst, args, s)
}
