package e2e

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// socket is a listening socket of a process, as /proc shows it.
type socket struct {
	proto string // tcp, tcp6, udp, udp6 or unix
	addr  netip.AddrPort
	path  string // a unix socket's
	pid   int
}

func (s socket) String() string {
	if s.proto == "unix" {
		return fmt.Sprintf("unix %s (pid %d)", s.path, s.pid)
	}
	return fmt.Sprintf("%s %s (pid %d)", s.proto, s.addr, s.pid)
}

// listeningSockets finds every listening TCP socket, bound UDP socket and
// listening unix socket that pid or one of its descendants holds: the
// inodes of their open sockets (/proc/PID/fd) looked up in the socket
// tables of their network namespace (/proc/PID/net).
func listeningSockets(t *testing.T, pid int) []socket {
	t.Helper()
	var out []socket
	for _, p := range append([]int{pid}, descendants(pid)...) {
		inodes := socketInodes(p)
		for _, proto := range []string{"tcp", "tcp6", "udp", "udp6", "unix"} {
			for _, s := range socketTable(t, p, proto) {
				if inodes[s.inode] {
					s.pid = p
					out = append(out, s.socket)
				}
			}
		}
	}
	return out
}

// descendants are the processes whose parent chain leads to pid.
func descendants(pid int) []int {
	parents := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) > 1 {
			ppid, _ := strconv.Atoi(fields[1])
			parents[ppid] = append(parents[ppid], child)
		}
	}
	var out []int
	for queue := parents[pid]; len(queue) > 0; queue = queue[1:] {
		out = append(out, queue[0])
		queue = append(queue, parents[queue[0]]...)
	}
	return out
}

// socketInodes are the inodes of pid's open sockets.
func socketInodes(pid int) map[string]bool {
	out := map[string]bool{}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, _ := os.ReadDir(dir)
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			out[strings.TrimSuffix(inode, "]")] = true
		}
	}
	return out
}

type tableEntry struct {
	socket
	inode string
}

// socketTable reads the listening (TCP, unix) or bound (UDP) sockets of
// /proc/PID/net/PROTO.
func socketTable(t *testing.T, pid int, proto string) []tableEntry {
	t.Helper()
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "net", proto))
	if err != nil {
		return nil // the process is gone
	}
	defer f.Close()
	var out []tableEntry
	lines := bufio.NewScanner(f)
	lines.Scan() // the header
	for lines.Scan() {
		fields := strings.Fields(lines.Text())
		if e, ok := parseEntry(t, proto, fields); ok {
			out = append(out, e)
		}
	}
	return out
}

// The states of a listening TCP socket and an unconnected UDP socket, and
// a unix socket's flag for listening (__SO_ACCEPTCON).
const (
	tcpListen    = "0A"
	udpClose     = "07"
	unixListener = "00010000"
)

func parseEntry(t *testing.T, proto string, fields []string) (tableEntry, bool) {
	if proto == "unix" {
		// Num RefCount Protocol Flags Type St Inode [Path]
		if len(fields) < 7 || fields[3] != unixListener {
			return tableEntry{}, false
		}
		e := tableEntry{socket: socket{proto: proto}, inode: fields[6]}
		if len(fields) > 7 {
			e.path = fields[7]
		}
		return e, true
	}
	// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
	if len(fields) < 10 || (proto[:3] == "tcp" && fields[3] != tcpListen) || (proto[:3] == "udp" && fields[3] != udpClose) {
		return tableEntry{}, false
	}
	host, port, _ := strings.Cut(fields[1], ":")
	raw, err := hex.DecodeString(host)
	n, perr := strconv.ParseUint(port, 16, 16)
	if err != nil || perr != nil {
		t.Fatalf("/proc/net/%s: address %q", proto, fields[1])
	}
	// The kernel prints each 32-bit word of the address in host order
	// (little-endian here).
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	ip, _ := netip.AddrFromSlice(raw)
	return tableEntry{socket: socket{proto: proto, addr: netip.AddrPortFrom(ip.Unmap(), uint16(n))}, inode: fields[9]}, true
}
