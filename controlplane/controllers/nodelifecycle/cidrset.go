package nodelifecycle

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
)

// errCIDRsExhausted is returned when every subnet of the cluster CIDR is in
// use.
var errCIDRsExhausted = errors.New("no pod CIDRs left in the cluster CIDR")

// maxSubnetBits caps how many subnets one cluster CIDR is cut into (2^16),
// as kube-controller-manager does.
const maxSubnetBits = 16

// cidrSet hands out the subnets of one cluster CIDR, each of maskSize
// bits, lowest free first, so a released subnet is the next one given.
// It is not safe for concurrent use; ipam serializes it.
type cidrSet struct {
	cluster  netip.Prefix
	maskSize int
	used     []bool
	inUse    int
}

// newCIDRSet cuts cluster into subnets of maskSize bits.
func newCIDRSet(cluster netip.Prefix, maskSize int) (*cidrSet, error) {
	cluster = cluster.Masked()
	if maskSize < cluster.Bits() || maskSize > cluster.Addr().BitLen() {
		return nil, fmt.Errorf("node CIDR mask size /%d does not fit in cluster CIDR %s", maskSize, cluster)
	}
	if maskSize-cluster.Bits() > maxSubnetBits {
		return nil, fmt.Errorf("cluster CIDR %s holds more than 2^%d subnets of /%d", cluster, maxSubnetBits, maskSize)
	}
	return &cidrSet{cluster: cluster, maskSize: maskSize, used: make([]bool, 1<<(maskSize-cluster.Bits()))}, nil
}

// allocate returns the lowest free subnet and marks it used.
func (s *cidrSet) allocate() (netip.Prefix, error) {
	for i, u := range s.used {
		if !u {
			s.used[i] = true
			s.inUse++
			return s.subnet(i), nil
		}
	}
	return netip.Prefix{}, errCIDRsExhausted
}

// occupy marks every subnet that p overlaps as used. It is idempotent.
func (s *cidrSet) occupy(p netip.Prefix) error {
	first, n, err := s.span(p)
	if err != nil {
		return err
	}
	for i := first; i < first+n; i++ {
		if !s.used[i] {
			s.used[i] = true
			s.inUse++
		}
	}
	return nil
}

// release frees every subnet that p overlaps. It is idempotent.
func (s *cidrSet) release(p netip.Prefix) error {
	first, n, err := s.span(p)
	if err != nil {
		return err
	}
	for i := first; i < first+n; i++ {
		if s.used[i] {
			s.used[i] = false
			s.inUse--
		}
	}
	return nil
}

// span returns the index of the first subnet p overlaps and how many.
func (s *cidrSet) span(p netip.Prefix) (first, n int, err error) {
	p = p.Masked()
	if p.Addr().BitLen() != s.cluster.Addr().BitLen() || p.Bits() < s.cluster.Bits() || !s.cluster.Contains(p.Addr()) {
		return 0, 0, fmt.Errorf("%s is not inside the cluster CIDR %s", p, s.cluster)
	}
	shift := uint(p.Addr().BitLen() - s.maskSize)
	offset := new(big.Int).Sub(addrInt(p.Addr()), addrInt(s.cluster.Addr()))
	first = int(offset.Rsh(offset, shift).Int64())
	n = 1
	if p.Bits() < s.maskSize {
		n = 1 << (s.maskSize - p.Bits())
	}
	return first, n, nil
}

// subnet is the i-th subnet of the cluster CIDR.
func (s *cidrSet) subnet(i int) netip.Prefix {
	bits := s.cluster.Addr().BitLen()
	offset := new(big.Int).Lsh(big.NewInt(int64(i)), uint(bits-s.maskSize))
	sum := offset.Add(offset, addrInt(s.cluster.Addr()))
	buf := sum.FillBytes(make([]byte, bits/8))
	addr, _ := netip.AddrFromSlice(buf)
	return netip.PrefixFrom(addr, s.maskSize)
}

func addrInt(a netip.Addr) *big.Int {
	return new(big.Int).SetBytes(a.AsSlice())
}
