package bench

import (
	"testing"
)

// The oracle's share against the zipfian law it samples: with YCSB's scrambled zipfian
// the top keys of 10 billion ranks land on the key range, so the exact share is not a
// closed form; it must grow with the skew and the fast store's size, reach about 1 when
// every key fits, and match for one seed twice.
func TestOracleShare(t *testing.T) {
	share := func(theta string, top int) float64 {
		t.Helper()
		w, err := NamedWorkload("write-heavy")
		if err != nil {
			t.Fatal(err)
		}
		w.RecordCount = 10000
		if err := w.Set("zipfianconstant", theta); err != nil {
			t.Fatal(err)
		}
		o, err := OracleShare(w, 200000, top, 7)
		if err != nil {
			t.Fatal(err)
		}
		if o.Reads < 90000 || o.Reads > 110000 {
			t.Fatalf("%d reads in 200,000 operations of a 50/50 mix", o.Reads)
		}
		return o.Share
	}
	s99, s90 := share("0.99", 1000), share("0.9", 1000)
	if !(s99 > s90 && s90 > 0.1) {
		t.Errorf("top 10%% of keys: share %.3f at 0.99, %.3f at 0.90: want more skew to give more", s99, s90)
	}
	if s := share("0.99", 100); s >= s99 {
		t.Errorf("top 1%% share %.3f not below top 10%% share %.3f", s, s99)
	}
	if s := share("0.99", 10000); s < 0.99 {
		t.Errorf("every key fits, share %.3f, want about 1 (only keys the ranking never drew miss)", s)
	}
	if a, b := share("0.99", 1000), share("0.99", 1000); a != b {
		t.Errorf("same seed, shares %v and %v", a, b)
	}
	t.Logf("top 10%%: %.3f at 0.99, %.3f at 0.90", s99, s90)
}

// A placement that learns from the requests cannot serve keys they have not named yet:
// the learned share grows with what it has seen, stays well under the oracle's after a
// few requests, and is the oracle's when it has seen as many as the oracle ranks.
func TestLearnedShareGrowsWithWhatItHasSeen(t *testing.T) {
	w, err := NamedWorkload("write-heavy")
	if err != nil {
		t.Fatal(err)
	}
	w.RecordCount = 10000
	if err := w.Set("zipfianconstant", "0.99"); err != nil {
		t.Fatal(err)
	}
	const ops, top = 200000, 1000
	oracle, err := OracleShare(w, ops, top, 7)
	if err != nil {
		t.Fatal(err)
	}
	var shares []float64
	for _, learn := range []int64{100, 2000, 20000, ops} {
		o, err := LearnedShare(w, learn, ops, top, 7)
		if err != nil {
			t.Fatal(err)
		}
		if learn < top && o.Keys > int(learn) {
			t.Errorf("after %d operations the ranking knows %d keys", learn, o.Keys)
		}
		shares = append(shares, o.Share)
	}
	t.Logf("learned shares %.3f (oracle %.3f)", shares, oracle.Share)
	for i := 1; i < len(shares); i++ {
		if shares[i] <= shares[i-1] {
			t.Errorf("learning from more operations did not serve more: %.3f", shares)
		}
	}
	if shares[0] > oracle.Share/2 {
		t.Errorf("after 100 operations the learned share %.3f is over half the oracle's %.3f", shares[0], oracle.Share)
	}
	if last := shares[len(shares)-1]; last != oracle.Share {
		t.Errorf("learning from the oracle's own draw: share %.4f, the oracle's %.4f", last, oracle.Share)
	}
	if _, err := LearnedShare(w, 0, ops, top, 7); err == nil {
		t.Error("learning from no operations was not refused")
	}
}
