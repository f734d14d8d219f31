package volumes

import "errors"

// Error kinds, matched with errors.Is. A missing configMap or secret is
// reported as the apimachinery NotFound error (apierrors.IsNotFound) and a
// missing hostPath matches fs.ErrNotExist.
var (
	// ErrInvalidPath: a payload path, subPath or hostPath is absolute where
	// it must be relative, contains a ".." element, or is otherwise malformed.
	ErrInvalidPath = errors.New("invalid path")
	// ErrMissingKey: a configMap or secret lacks a key the volume's items name.
	ErrMissingKey = errors.New("missing key")
	// ErrOutsideVolume: a subPath resolves, through symlinks, outside its volume.
	ErrOutsideVolume = errors.New("outside volume")
	// ErrHostPathType: a hostPath exists but is not of the type asked for,
	// or the type itself is unknown.
	ErrHostPathType = errors.New("hostPath type mismatch")
	// ErrUnsupported: the volume type or projected source is not handled here.
	ErrUnsupported = errors.New("unsupported volume source")
)

// kindError carries a message worded like the kubelet's while matching one
// of the kinds above (or fs.ErrNotExist) and keeping its cause reachable.
type kindError struct {
	kind  error
	msg   string
	cause error
}

func (e *kindError) Error() string        { return e.msg }
func (e *kindError) Is(target error) bool { return target == e.kind }
func (e *kindError) Unwrap() error        { return e.cause }

// newError returns an error reading msg that matches kind, optionally
// wrapping cause.
func newError(kind error, msg string, cause error) error {
	return &kindError{kind: kind, msg: msg, cause: cause}
}
