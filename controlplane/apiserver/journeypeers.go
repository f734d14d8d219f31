package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiff-lab/skiff/podtrace"
)

// journeyPeers keeps the servers pods' journeys are forwarded to
// (Config.JourneyPeers) the other API servers with live records, as the
// records come and go; and, once, catches up on the journeys they keep.
type journeyPeers struct {
	s        *Server
	self     string // this server's address
	caughtUp bool
}

// followJourneyPeers follows the servers' records until ctx ends.
func (s *Server) followJourneyPeers(ctx context.Context, self string) {
	if s.cfg.JourneyPeers == nil || s.cfg.Journeys == nil {
		return
	}
	p := &journeyPeers{s: s, self: self}
	backoff := reconcileBackoff()
	for {
		began := time.Now()
		err := p.watch(ctx)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			backoff = reconcileBackoff()
		}
		retry := backoff.Step()
		slog.Warn("the API servers pods' journeys are forwarded to are not followed", "err", err, "retry", retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(retry):
		}
	}
}

// watch lists the servers' records, then follows them until the watch
// fails.
func (p *journeyPeers) watch(ctx context.Context) error {
	c := p.s.store.Client()
	resp, err := c.Get(ctx, masterLeasePrefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	ports := map[string]string{} // by the server's address
	for _, kv := range resp.Kvs {
		ports[strings.TrimPrefix(string(kv.Key), masterLeasePrefix)] = string(kv.Value)
	}
	p.set(ctx, ports)
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for wr := range c.Watch(ctx, masterLeasePrefix, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if err := wr.Err(); err != nil {
			return err
		}
		for _, ev := range wr.Events {
			ip := strings.TrimPrefix(string(ev.Kv.Key), masterLeasePrefix)
			if ev.Type == clientv3.EventTypeDelete {
				delete(ports, ip)
			} else {
				ports[ip] = string(ev.Kv.Value)
			}
		}
		p.set(ctx, ports)
	}
	return errors.New("watch of the API servers' records ended")
}

// set makes the servers of ports but this one the peers, and catches up
// from them if it has not yet.
func (p *journeyPeers) set(ctx context.Context, ports map[string]string) {
	var bases, reports []string
	for ip, port := range ports {
		if ip != p.self && net.ParseIP(ip) != nil {
			base := "https://" + net.JoinHostPort(ip, port)
			bases = append(bases, base)
			reports = append(reports, base+podtrace.ReportPath)
		}
	}
	p.s.cfg.JourneyPeers.Set(reports)
	if !p.caughtUp {
		p.catchUp(ctx, bases)
	}
}

// catchUp merges the journeys the first peer that answers keeps: a server
// that starts (or restarts) has the journeys of the pods from before. With
// no peer answering it tries again at the next change of the records
// (each server renews its own every 10 s). The first server of a cluster
// has none to catch up from.
func (p *journeyPeers) catchUp(ctx context.Context, bases []string) {
	if len(bases) == 0 {
		p.caughtUp = true
		return
	}
	journeys := p.s.cfg.Journeys
	limit := "?limit=" + strconv.Itoa(journeys.Capacity())
	for _, base := range bases {
		n, err := p.s.cfg.JourneyPeers.CatchUp(ctx, journeys, base+uiJourneysPath+limit)
		if err == nil {
			slog.Info("pods' journeys read from another server", "server", base, "journeys", n)
			p.caughtUp = true
			return
		}
		slog.Warn("pods' journeys not read from another server", "server", base, "err", err)
	}
}
