package e2e

import (
	"strings"
	"testing"
)

const widgetCRDYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
              max: {type: integer}
            x-kubernetes-validations:
            - {rule: "!has(self.max) || self.size <= self.max", message: "size must not exceed max"}
          status:
            type: object
            properties:
              ready: {type: boolean}
`

const widgetYAML = `apiVersion: example.com/v1
kind: Widget
metadata: {name: w1}
spec: {size: 2}
`

// TestKubectlCustomResources: with the unmodified kubectl, a CRD with a
// schema, a CEL rule, a printer column and a status subresource is
// applied and waited for; kubectl explain reads its fields from the
// OpenAPI documents, and a built-in kind's; its objects are created, listed with their
// column, refused with the rule's message, and applied server-side by two
// managers, the second one's change of the first one's field a conflict
// until forced.
func TestKubectlCustomResources(t *testing.T) {
	c := startCluster(t)
	expectContains(t, "apply CRD", c.mustIn(widgetCRDYAML, "apply", "-f", "-"), "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created")
	c.must("wait", "--for", "condition=Established", "--timeout", "30s", "crd/widgets.example.com")
	expectContains(t, "explain widget.spec.size", c.must("explain", "widget.spec.size"), "GROUP:      example.com", "FIELD: size <integer>")
	expectContains(t, "explain pod.spec.containers", c.must("explain", "pod.spec.containers"), "FIELD: containers <[]Container>", "List of containers belonging to the pod.")
	expectContains(t, "create widget", c.mustIn(widgetYAML, "create", "-f", "-"), "widget.example.com/w1 created")
	header, rows := columns(c.must("get", "wd"))
	if strings.Join(header, "|") != "NAME|SIZE" || len(rows) != 1 || rows[0][0] != "w1" || rows[0][1] != "2" {
		t.Errorf("get wd: %v %v", header, rows)
	}
	bad := strings.Replace(widgetYAML, "spec: {size: 2}", "spec: {size: 5, max: 3}", 1)
	_, errOut, err := c.kubectlIn(bad, "apply", "-f", "-")
	if err == nil || !strings.Contains(errOut, "size must not exceed max") {
		t.Errorf("apply breaking the CEL rule: %v %s", err, errOut)
	}

	expectContains(t, "server-side apply", c.mustIn(widgetYAML, "apply", "--server-side", "--field-manager", "alice", "-f", "-"), "widget.example.com/w1 serverside-applied")
	bigger := strings.Replace(widgetYAML, "size: 2", "size: 3", 1)
	_, errOut, err = c.kubectlIn(bigger, "apply", "--server-side", "--field-manager", "bob", "-f", "-")
	if err == nil || !strings.Contains(errOut, `with "alice"`) || !strings.Contains(errOut, ".spec.size") {
		t.Errorf("bob applying alice's field: %v %s, want a conflict naming alice and .spec.size", err, errOut)
	}
	c.mustIn(bigger, "apply", "--server-side", "--field-manager", "bob", "--force-conflicts", "-f", "-")
	if got := c.must("get", "widget", "w1", "-o", "jsonpath={.spec.size}"); got != "3" {
		t.Errorf("size after the forced apply: %q, want 3", got)
	}
	expectContains(t, "delete CRD", c.must("delete", "crd", "widgets.example.com"), "deleted")
	if _, errOut, err := c.kubectl("get", "widgets"); err == nil {
		t.Errorf("get widgets after the CRD's deletion succeeded: %s", errOut)
	}
}
