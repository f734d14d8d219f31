package envvars

import (
	"errors"
	"fmt"
	"strings"
)

// ErrMissing matches, with errors.Is, every *MissingError.
var ErrMissing = errors.New("missing configmap, secret or key")

// MissingError reports a ConfigMap or Secret, or a key in one, that a
// container's environment requires (not marked optional) but that does not
// exist. The kubelet reports it as CreateContainerConfigError and retries
// on a later sync; the messages are the kubelet's.
type MissingError struct {
	Kind      string // "ConfigMap" or "Secret"
	Namespace string
	Name      string
	Key       string // the missing key; empty when the object itself is missing
	Err       error  // the Sources error for a missing object (apierrors.IsNotFound holds), else nil
}

// Error reads `configmap "x" not found` for a missing object and
// `couldn't find key k in ConfigMap ns/x` for a missing key.
func (e *MissingError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s %q not found", strings.ToLower(e.Kind), e.Name)
	}
	return fmt.Sprintf("couldn't find key %s in %s %s/%s", e.Key, e.Kind, e.Namespace, e.Name)
}

// Is reports whether target is ErrMissing.
func (e *MissingError) Is(target error) bool { return target == ErrMissing }

// Unwrap returns the Sources error for a missing object.
func (e *MissingError) Unwrap() error { return e.Err }
