package vm

import (
	"testing"
	"time"
)

// BenchmarkVMCluster is the VM tier's cluster coming up, as users run it
// (the image built and the accelerator probed beforehand): two VMs booted
// to ssh, `skiff install server` to the API answering,
// `skiff install agent` to its node Ready. Each iteration boots VMs of
// its own: run it with -benchtime=1x (make bench-vm).
func BenchmarkVMCluster(b *testing.B) {
	requireVMTier(b)
	img := buildImage(b, hostArch())
	accel := accelerator(b, img)
	for b.Loop() {
		start := time.Now()
		c := bootCluster(b, img, accel)
		booted := time.Now()
		c.installServer()
		server := time.Now()
		c.installAgent()
		agent := time.Now()
		b.ReportMetric(booted.Sub(start).Seconds(), "s-boot")
		b.ReportMetric(server.Sub(booted).Seconds(), "s-install-server")
		b.ReportMetric(agent.Sub(server).Seconds(), "s-install-agent")
		b.ReportMetric(agent.Sub(start).Seconds(), "s-cluster-up")
	}
}
