// Command kubectl is an unmodified upstream kubectl (k8s.io/kubectl pkg/cmd),
// built in its own module so skiff's tests can drive a real client against
// the skiff API server. This mirrors kubernetes' cmd/kubectl/kubectl.go.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"

	// Import to initialize client auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		// Pretty-print the error and exit with an error.
		util.CheckErr(err)
	}
}
