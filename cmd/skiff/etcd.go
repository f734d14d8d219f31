package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/skiff-lab/skiff/controlplane"
	"github.com/skiff-lab/skiff/controlplane/etcdsnapshot"
)

// etcdCommand is `skiff etcd member|snapshot`: run on a server machine, it
// reaches that server's embedded etcd through its client socket with the
// credentials under --data-dir, as `skiff server` keeps them.
func etcdCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{Use: "etcd", Short: "Manage this server's embedded etcd: its cluster's members, snapshots"}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", "/var/lib/skiff", "the server's state directory")
	client := func(run func(c *clientv3.Client) error) error {
		c, err := controlplane.LocalEtcdClient(dataDir)
		if err != nil {
			return err
		}
		defer c.Close()
		return run(c)
	}
	member := &cobra.Command{Use: "member", Short: "List or remove the members of the servers' etcd cluster"}
	member.AddCommand(memberListCommand(client), memberRemoveCommand(client))
	snapshot := &cobra.Command{Use: "snapshot", Short: "Save a snapshot of the etcd, or restore one into a stopped server's data dir"}
	snapshot.AddCommand(snapshotSaveCommand(client), snapshotRestoreCommand(&dataDir))
	cmd.AddCommand(member, snapshot)
	return cmd
}

type etcdClientFunc func(run func(c *clientv3.Client) error) error

func memberListCommand(client etcdClientFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the members: ID, name, peer URL, and whether each votes or is a learner",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return client(func(c *clientv3.Client) error {
				list, err := c.MemberList(cmd.Context())
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
				fmt.Fprintln(w, "ID\tNAME\tPEER URLS\tROLE")
				for _, m := range list.Members {
					role := "voter"
					switch {
					case m.IsLearner:
						role = "learner"
					case m.Name == "":
						role = "not started"
					}
					fmt.Fprintf(w, "%x\t%s\t%s\t%s\n", m.ID, m.Name, strings.Join(m.PeerURLs, ","), role)
				}
				return w.Flush()
			})
		},
	}
}

func memberRemoveCommand(client etcdClientFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME|ID",
		Short: "Remove a member (a server that is gone for good) from the cluster",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return client(func(c *clientv3.Client) error {
				m, err := controlplane.RemoveEtcdMember(cmd.Context(), c, args[0])
				if err == nil && m == nil {
					err = fmt.Errorf("no member named %s", args[0])
				}
				if err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "member %s (%x) removed\n", m.Name, m.ID)
				}
				return err
			})
		},
	}
}

func snapshotSaveCommand(client etcdClientFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of the etcd (every object of the cluster) to FILE",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return client(func(c *clientv3.Client) error {
				size, err := etcdsnapshot.Save(cmd.Context(), c, args[0])
				if err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "snapshot saved to %s (%d bytes)\n", args[0], size)
				}
				return err
			})
		},
	}
}

func snapshotRestoreCommand(dataDir *string) *cobra.Command {
	var peerPort int
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Restore a snapshot as the etcd data of a stopped server (<data-dir>/server/etcd must not exist): it starts as a cluster of one with every object of the snapshot",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := controlplane.RestoreEtcdSnapshot(*dataDir, args[0], peerPort); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "snapshot %s restored into %s: start the server; other servers join it afresh\n", args[0], *dataDir)
			return nil
		},
	}
	cmd.Flags().IntVar(&peerPort, "etcd-peer-port", 2380, "the server's --etcd-peer-port")
	return cmd
}
