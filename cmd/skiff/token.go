package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/skiff-lab/skiff/jointoken"
)

// tokenCommand is `skiff token create|list|delete`, kubeadm token's
// counterpart: join tokens kept as bootstrap token Secrets, through the
// API as the admin kubeconfig's user.
func tokenCommand() *cobra.Command {
	var kubeconfig string
	cmd := &cobra.Command{Use: "token", Short: "Manage the tokens nodes join with"}
	cmd.PersistentFlags().StringVar(&kubeconfig, "kubeconfig", "/etc/skiff/admin.kubeconfig", "kubeconfig of a cluster admin")
	client := func() (kubernetes.Interface, []byte, error) {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		c, err := kubernetes.NewForConfig(cfg)
		return c, cfg.CAData, err
	}
	cmd.AddCommand(tokenCreateCommand(client), tokenListCommand(client), tokenDeleteCommand(client))
	return cmd
}

type clientFunc func() (kubernetes.Interface, []byte, error)

func tokenCreateCommand(client clientFunc) *cobra.Command {
	var ttl time.Duration
	var description string
	var groups []string
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Create a join token and print it (skiff agent --token)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, caData, err := client()
			if err != nil {
				return err
			}
			ca, err := jointoken.ParseCA(caData)
			if err != nil {
				return fmt.Errorf("the kubeconfig's certificate authority: %w", err)
			}
			tok, err := jointoken.Create(cmd.Context(), c, ca, ttl, description, groups)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok.String())
			return nil
		},
	}
	cmd.Flags().DurationVar(&ttl, "ttl", 24*time.Hour, "how long the token is valid (0: until deleted)")
	cmd.Flags().StringVar(&description, "description", "", "what the token is for")
	cmd.Flags().StringSliceVar(&groups, "groups", nil, "extra groups of the nodes joining with it (system:bootstrappers:...)")
	return cmd
}

func tokenListCommand(client clientFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the join tokens (their ids, never their secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, _, err := client()
			if err != nil {
				return err
			}
			tokens, err := jointoken.List(cmd.Context(), c)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 8, 3, ' ', 0)
			fmt.Fprintln(w, "ID\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
			for _, t := range tokens {
				ttl, expires := "<forever>", "<never>"
				if !t.Expires.IsZero() {
					ttl, expires = time.Until(t.Expires).Round(time.Second).String(), t.Expires.Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, ttl, expires, strings.Join(t.Usages, ","), orNone(t.Description), orNone(strings.Join(t.Groups, ",")))
			}
			return w.Flush()
		},
	}
}

func tokenDeleteCommand(client clientFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID...",
		Short: "Delete join tokens (by id, id.secret or the whole join token)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, _, err := client()
			if err != nil {
				return err
			}
			for _, a := range args {
				id, err := jointoken.Delete(cmd.Context(), c, a)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "token %s deleted\n", id)
			}
			return nil
		},
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// readTokenFile sets *token from file (its first line), if file is given;
// the two flags exclude each other.
func readTokenFile(token *string, file string) error {
	if file == "" {
		return nil
	}
	if *token != "" {
		return errors.New("--token and --token-file exclude each other")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--token-file: %w", err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	if *token = strings.TrimSpace(first); *token == "" {
		return fmt.Errorf("--token-file: %s holds no token", file)
	}
	return nil
}

// parseFileMode reads an octal file mode such as 0644.
func parseFileMode(s string) (os.FileMode, error) {
	m, err := strconv.ParseUint(s, 8, 32)
	if err != nil || m > 0o777 {
		return 0, fmt.Errorf("%q is not an octal file mode such as 0600", s)
	}
	return os.FileMode(m), nil
}
