package nodelifecycle

import (
	"errors"
	"net/netip"
	"testing"
)

func TestCIDRSetAllocate(t *testing.T) {
	cases := []struct {
		name     string
		cluster  string
		maskSize int
		occupied []string
		released []string
		want     []string // successive allocations; "" for exhausted
	}{
		{name: "lowest first", cluster: "10.244.0.0/16", maskSize: 24,
			want: []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}},
		{name: "skips occupied", cluster: "10.244.0.0/16", maskSize: 24, occupied: []string{"10.244.0.0/24", "10.244.2.0/24"},
			want: []string{"10.244.1.0/24", "10.244.3.0/24"}},
		{name: "a wider podCIDR occupies every subnet it covers", cluster: "10.244.0.0/16", maskSize: 24, occupied: []string{"10.244.0.0/23"},
			want: []string{"10.244.2.0/24"}},
		{name: "a released subnet is reused first", cluster: "10.244.0.0/16", maskSize: 24,
			occupied: []string{"10.244.0.0/24", "10.244.1.0/24", "10.244.2.0/24"}, released: []string{"10.244.1.0/24"},
			want: []string{"10.244.1.0/24", "10.244.3.0/24"}},
		{name: "exhaustion", cluster: "10.0.0.0/30", maskSize: 31,
			want: []string{"10.0.0.0/31", "10.0.0.2/31", ""}},
		{name: "exhausted, then one released", cluster: "10.0.0.0/30", maskSize: 31,
			occupied: []string{"10.0.0.0/31", "10.0.0.2/31"}, released: []string{"10.0.0.2/31"},
			want: []string{"10.0.0.2/31", ""}},
		{name: "IPv6", cluster: "fd00:10:244::/48", maskSize: 64,
			want: []string{"fd00:10:244::/64", "fd00:10:244:1::/64"}},
		{name: "unaligned cluster CIDR is masked", cluster: "10.244.7.9/16", maskSize: 24,
			want: []string{"10.244.0.0/24"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newCIDRSet(netip.MustParsePrefix(tc.cluster), tc.maskSize)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.occupied {
				if err := s.occupy(netip.MustParsePrefix(c)); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range tc.released {
				if err := s.release(netip.MustParsePrefix(c)); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range tc.want {
				got, err := s.allocate()
				if want == "" {
					if !errors.Is(err, errCIDRsExhausted) {
						t.Errorf("allocation %d: got %v, %v; want exhausted", i, got, err)
					}
					continue
				}
				if err != nil || got.String() != want {
					t.Errorf("allocation %d: got %v, %v; want %s", i, got, err, want)
				}
			}
		})
	}
}

func TestCIDRSetNeverTwice(t *testing.T) {
	s, err := newCIDRSet(netip.MustParsePrefix("10.244.0.0/16"), 24)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Prefix]bool{}
	for range 256 {
		p, err := s.allocate()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("%s given twice", p)
		}
		seen[p] = true
	}
	if _, err := s.allocate(); !errors.Is(err, errCIDRsExhausted) {
		t.Fatalf("257th allocation: %v, want exhausted", err)
	}
	if s.inUse != 256 {
		t.Errorf("inUse %d", s.inUse)
	}
}

func TestCIDRSetRejects(t *testing.T) {
	if _, err := newCIDRSet(netip.MustParsePrefix("10.0.0.0/8"), 25); err == nil {
		t.Error("2^17 subnets accepted")
	}
	if _, err := newCIDRSet(netip.MustParsePrefix("10.244.0.0/16"), 8); err == nil {
		t.Error("mask wider than the cluster CIDR accepted")
	}
	s, _ := newCIDRSet(netip.MustParsePrefix("10.244.0.0/16"), 24)
	for _, p := range []string{"10.245.0.0/24", "10.0.0.0/8", "fd00::/64"} {
		if err := s.occupy(netip.MustParsePrefix(p)); err == nil {
			t.Errorf("occupy %s outside the cluster CIDR accepted", p)
		}
	}
}
