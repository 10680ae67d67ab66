package node

import (
	"fmt"
	"io"
	"net/http"

	"github.com/kuradb/kura/internal/engine"
)

// serveStore answers /debug/store (`kura admin store`) with the engine's report of its
// store (engine.Reporter) as text, or 404 when the engine has none.
func (n *Node) serveStore(w http.ResponseWriter, _ *http.Request) {
	r, ok := n.eng.(engine.Reporter)
	if !ok {
		http.Error(w, fmt.Sprintf("the %s engine has no store report\n", n.eng.Name()), http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, r.Report())
}
