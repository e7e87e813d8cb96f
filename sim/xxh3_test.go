package sim

import "testing"

// TestDigestMatchesXXH3Vectors checks the XXH3-64 behind DIGEST against
// xxHash's published sanity vectors (seed 0) and the value recorded from
// Redis 8.4 (DIGEST of "v").
func TestDigestMatchesXXH3Vectors(t *testing.T) {
	buf := make([]byte, 2367)
	gen := uint64(2654435761)
	for i := range buf {
		buf[i] = byte(gen >> 56)
		gen *= 11400714785074694797
	}
	for _, v := range []struct {
		n    int
		want uint64
	}{
		{0, 0x2D06800538D394C2}, {1, 0xC44BDFF4074EECDB}, {6, 0x27B56A84CD2D7325}, {12, 0xA713DAF0DFBB77E7},
		{24, 0xA3FE70BF9D3510EB}, {48, 0x397DA259ECBA1F11}, {80, 0xBCDEFBBB2C47C90A}, {195, 0xCD94217EE362EC3A},
		{403, 0xCDEB804D65C6DEA4}, {512, 0x617E49599013CB6B}, {2048, 0xDD59E2C3A5F038E0},
		{2240, 0x6E73A90539CF2948}, {2367, 0xCB37AEB9E5D361ED},
	} {
		if got := xxh3(buf[:v.n]); got != v.want {
			t.Errorf("xxh3(len %d) = %#x; want %#x", v.n, got, v.want)
		}
	}
	if got := digest("v"); got != "f7042be43fb80714" {
		t.Errorf(`digest("v") = %s; want f7042be43fb80714`, got)
	}
}
