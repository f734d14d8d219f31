package supervisor

import (
	"context"
	"fmt"
	"time"

	"github.com/containerd/containerd/v2/client"
)

// pingTimeout bounds one health check.
const pingTimeout = 2 * time.Second

// ping asks the containerd at address for its version.
func ping(ctx context.Context, address string) error {
	c, err := client.New(address, client.WithTimeout(pingTimeout))
	if err != nil {
		return fmt.Errorf("containerd client: %w", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := c.Version(ctx); err != nil {
		return fmt.Errorf("containerd version: %w", err)
	}
	return nil
}
